//===- Manifest.cpp - the interface a .tgx artifact declares --------------===//
//
// Strict validation: unknown dtypes, negative or huge shapes, duplicate
// names and entry names that are not C identifiers are all rejected here,
// so the executor can size buffers without further checks.
//
//===----------------------------------------------------------------------===//
#include "runtime/Manifest.h"

#include <set>

namespace tgrt {

bool isPersistentRole(std::string_view role) {
  return role == "param" || role == "state" || role == "step";
}

std::string TensorSpec::str() const {
  return name + ": " + dtypeName(dtype) + shapeString(shape);
}

namespace {
bool isIdentifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9'))
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

bool parseSpec(const Json &j, const std::string &where, TensorSpec &out,
               std::string &err) {
  auto fail = [&](const std::string &field, const std::string &msg) {
    err = "manifest: " + where + field + ": " + msg;
    return false;
  };
  if (!j.is_object())
    return fail("", "expected an object");
  const Json *name = jsonGet(j, "name"), *role = jsonGet(j, "role"),
             *dtype = jsonGet(j, "dtype"), *shape = jsonGet(j, "shape");
  if (!name || !name->is_string() || name->get_ref<const std::string &>().empty())
    return fail(".name", "expected a non-empty string");
  if (!role || !role->is_string() || role->get_ref<const std::string &>().empty())
    return fail(".role", "expected a non-empty string");
  if (!dtype || !dtype->is_string())
    return fail(".dtype", "expected a string");
  const std::string &dtypeText = dtype->get_ref<const std::string &>();
  std::optional<DType> parsed = parseDType(dtypeText);
  if (!parsed)
    return fail(".dtype", "unknown dtype '" + dtypeText +
                              "' (expected f32, f64, bf16, f16, i32, i64 or i1)");
  out.dtype = *parsed;
  if (!shape || !shape->is_array())
    return fail(".shape", "expected an array of dimensions");
  if (shape->size() > 16)
    return fail(".shape", "rank above 16");
  out.shape.clear();
  for (const Json &d : *shape) {
    std::optional<int64_t> dim = jsonInt(d);
    if (!dim || *dim < 0)
      return fail(".shape", "dimensions must be non-negative integers");
    out.shape.push_back(*dim);
  }
  // 2^40 elements is far above any host buffer; it keeps sizes in range.
  if (!shapeNumel(out.shape, out.numel, uint64_t(1) << 40))
    return fail(".shape", "too many elements");
  out.fullShape.clear();
  out.sharded = false;
  if (const Json *full = jsonGet(j, "full_shape")) {
    out.sharded = true;
    uint64_t n = 0;
    if (!full->is_array() || full->size() > 16 || out.shape.size() != 1)
      return fail(".full_shape", "expected the dimensions of the tensor a "
                                 "1-D shard belongs to");
    for (const Json &d : *full) {
      std::optional<int64_t> dim = jsonInt(d);
      if (!dim || *dim < 0)
        return fail(".full_shape", "dimensions must be non-negative integers");
      out.fullShape.push_back(*dim);
    }
    if (!shapeNumel(out.fullShape, n, uint64_t(1) << 40))
      return fail(".full_shape", "too many elements");
  }
  out.name = name->get<std::string>();
  out.role = role->get<std::string>();
  return true;
}

bool parseList(const Json *j, const std::string &where,
               std::vector<TensorSpec> &out, std::string &err) {
  if (!j || !j->is_array()) {
    err = "manifest: " + where + ": expected an array";
    return false;
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < j->size(); ++i) {
    TensorSpec s;
    std::string at = where + "[" + std::to_string(i) + "]";
    if (!parseSpec((*j)[i], at, s, err))
      return false;
    if (!seen.insert({s.role, s.name}).second) {
      err = "manifest: " + at + ": duplicate " + s.role + " '" + s.name + "'";
      return false;
    }
    out.push_back(std::move(s));
  }
  return true;
}
} // namespace

bool Manifest::parse(std::string_view text, Manifest &out, std::string &err) {
  Json doc;
  if (!parseJson(text, doc, err)) {
    err = "manifest: invalid JSON: " + err;
    return false;
  }
  if (!doc.is_object()) {
    err = "manifest: expected a JSON object";
    return false;
  }
  const Json *formatJson = jsonGet(doc, "format");
  std::optional<int64_t> format = formatJson ? jsonInt(*formatJson) : std::nullopt;
  if (!format) {
    err = "manifest: format: expected an integer";
    return false;
  }
  if (*format != kManifestFormat) {
    err = "manifest: format " + std::to_string(*format) +
          " is not supported (this runtime reads format " +
          std::to_string(kManifestFormat) + ")";
    return false;
  }
  Manifest m;
  m.format = *format;
  if (const Json *model = jsonGet(doc, "model")) {
    if (!model->is_string()) {
      err = "manifest: model: expected a string";
      return false;
    }
    m.model = model->get<std::string>();
  }
  if (const Json *ranks = jsonGet(doc, "ranks")) {
    std::optional<int64_t> n = jsonInt(*ranks);
    if (!n || *n < 1 || *n > (1 << 20)) {
      err = "manifest: ranks: expected an integer from 1 to 1048576";
      return false;
    }
    m.ranks = *n;
  }
  if (const Json *zero = jsonGet(doc, "zero")) {
    std::optional<int64_t> n = jsonInt(*zero);
    if (!n || (*n != 0 && *n != 1)) {
      err = "manifest: zero: expected 0 or 1 (the ZeRO stage)";
      return false;
    }
    m.zero = *n;
  }
  const Json *entries = jsonGet(doc, "entries");
  if (!entries || !entries->is_object()) {
    err = "manifest: entries: expected an object";
    return false;
  }
  for (const auto &[name, e] : entries->items()) {
    std::string where = "entries." + name;
    if (!isIdentifier(name)) {
      err = "manifest: " + where + ": entry names must be C identifiers";
      return false;
    }
    if (!e.is_object()) {
      err = "manifest: " + where + ": expected an object";
      return false;
    }
    EntrySpec spec;
    spec.name = name;
    if (!parseList(jsonGet(e, "args"), where + ".args", spec.args, err) ||
        !parseList(jsonGet(e, "results"), where + ".results", spec.results, err))
      return false;
    if (const Json *inplace = jsonGet(e, "inplace")) {
      if (!inplace->is_boolean()) {
        err = "manifest: " + where + ".inplace: expected true or false";
        return false;
      }
      spec.inplace = inplace->get<bool>();
    }
    if (const Json *arenaJson = jsonGet(e, "arena_bytes")) {
      // At most 1 TiB: a larger number is a corrupt manifest, not a plan.
      std::optional<int64_t> arena = jsonInt(*arenaJson);
      if (!arena || *arena < 0 || *arena > (int64_t(1) << 40)) {
        err = "manifest: " + where +
              ".arena_bytes: expected a byte count (0 to 1 TiB)";
        return false;
      }
      spec.arenaBytes = *arena;
    }
    m.entries.push_back(std::move(spec));
  }
  if (const Json *memory = jsonGet(doc, "memory"))
    m.memory = *memory;
  m.raw = std::move(doc);
  out = std::move(m);
  return true;
}

const EntrySpec *Manifest::entry(std::string_view name) const {
  for (const EntrySpec &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

static Json specJson(const TensorSpec &s) {
  Json j{{"name", s.name},
         {"role", s.role},
         {"dtype", dtypeName(s.dtype)},
         {"shape", s.shape}};
  if (s.sharded)
    j["full_shape"] = s.fullShape;
  return j;
}

Json Manifest::describe() const {
  Json out = Json::object();
  out["model"] = model;
  if (ranks > 1)
    out["ranks"] = ranks;
  if (zero)
    out["zero"] = zero;
  Json params = Json::array(), state = Json::array(), inputs = Json::array(),
       outputs = Json::array(), entryJson = Json::object();
  std::set<std::string> seenState, seenInputs;
  for (const EntrySpec &e : entries) {
    Json ej = Json::object(), args = Json::array(), results = Json::array();
    for (const TensorSpec &s : e.args) {
      args.push_back(specJson(s));
      if (isPersistentRole(s.role)) {
        if (seenState.insert(s.name).second)
          (s.role == "param" ? params : state).push_back(specJson(s));
      } else if (e.name != "init" && seenInputs.insert(s.name).second) {
        inputs.push_back(specJson(s));
      }
    }
    for (const TensorSpec &s : e.results) {
      results.push_back(specJson(s));
      if (e.name == "eval")
        outputs.push_back(specJson(s));
    }
    ej["args"] = std::move(args);
    ej["results"] = std::move(results);
    if (e.arenaBytes > 0)
      ej["arena_bytes"] = e.arenaBytes;
    entryJson[e.name] = std::move(ej);
  }
  out["entries"] = std::move(entryJson);
  out["parameters"] = std::move(params);
  out["state"] = std::move(state);
  out["inputs"] = std::move(inputs);
  out["outputs"] = std::move(outputs);
  if (!memory.is_null())
    out["memory"] = memory;
  return out;
}

} // namespace tgrt
