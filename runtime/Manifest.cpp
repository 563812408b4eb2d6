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
  if (!j.isObject())
    return fail("", "expected an object");
  const Json *name = j.get("name"), *role = j.get("role"),
             *dtype = j.get("dtype"), *shape = j.get("shape");
  if (!name || !name->isString() || name->asString().empty())
    return fail(".name", "expected a non-empty string");
  if (!role || !role->isString() || role->asString().empty())
    return fail(".role", "expected a non-empty string");
  if (!dtype || !dtype->isString())
    return fail(".dtype", "expected a string");
  if (!parseDType(dtype->asString(), out.dtype))
    return fail(".dtype", "unknown dtype '" + dtype->asString() +
                              "' (expected f32, f64, bf16, f16, i32, i64 or i1)");
  if (!shape || !shape->isArray())
    return fail(".shape", "expected an array of dimensions");
  if (shape->items().size() > 16)
    return fail(".shape", "rank above 16");
  out.shape.clear();
  for (const Json &d : shape->items()) {
    if (!d.isInt() || d.asInt() < 0)
      return fail(".shape", "dimensions must be non-negative integers");
    out.shape.push_back(d.asInt());
  }
  // 2^40 elements is far above any host buffer; it keeps sizes in range.
  if (!shapeNumel(out.shape, out.numel, uint64_t(1) << 40))
    return fail(".shape", "too many elements");
  out.name = name->asString();
  out.role = role->asString();
  return true;
}

bool parseList(const Json *j, const std::string &where,
               std::vector<TensorSpec> &out, std::string &err) {
  if (!j || !j->isArray()) {
    err = "manifest: " + where + ": expected an array";
    return false;
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < j->items().size(); ++i) {
    TensorSpec s;
    std::string at = where + "[" + std::to_string(i) + "]";
    if (!parseSpec(j->items()[i], at, s, err))
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
  if (!Json::parse(text, doc, err)) {
    err = "manifest: invalid JSON: " + err;
    return false;
  }
  if (!doc.isObject()) {
    err = "manifest: expected a JSON object";
    return false;
  }
  const Json *format = doc.get("format");
  if (!format || !format->isInt()) {
    err = "manifest: format: expected an integer";
    return false;
  }
  if (format->asInt() != kManifestFormat) {
    err = "manifest: format " + std::to_string(format->asInt()) +
          " is not supported (this runtime reads format " +
          std::to_string(kManifestFormat) + ")";
    return false;
  }
  Manifest m;
  m.format = format->asInt();
  if (const Json *model = doc.get("model")) {
    if (!model->isString()) {
      err = "manifest: model: expected a string";
      return false;
    }
    m.model = model->asString();
  }
  const Json *entries = doc.get("entries");
  if (!entries || !entries->isObject()) {
    err = "manifest: entries: expected an object";
    return false;
  }
  for (const auto &[name, e] : entries->members()) {
    std::string where = "entries." + name;
    if (!isIdentifier(name)) {
      err = "manifest: " + where + ": entry names must be C identifiers";
      return false;
    }
    if (!e.isObject()) {
      err = "manifest: " + where + ": expected an object";
      return false;
    }
    EntrySpec spec;
    spec.name = name;
    if (!parseList(e.get("args"), where + ".args", spec.args, err) ||
        !parseList(e.get("results"), where + ".results", spec.results, err))
      return false;
    if (const Json *inplace = e.get("inplace")) {
      if (!inplace->isBool()) {
        err = "manifest: " + where + ".inplace: expected true or false";
        return false;
      }
      spec.inplace = inplace->asBool();
    }
    if (const Json *arena = e.get("arena_bytes")) {
      // At most 1 TiB: a larger number is a corrupt manifest, not a plan.
      if (!arena->isInt() || arena->asInt() < 0 ||
          arena->asInt() > (int64_t(1) << 40)) {
        err = "manifest: " + where +
              ".arena_bytes: expected a byte count (0 to 1 TiB)";
        return false;
      }
      spec.arenaBytes = arena->asInt();
    }
    m.entries.push_back(std::move(spec));
  }
  if (const Json *memory = doc.get("memory"))
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
  Json j = Json::object();
  j.set("name", Json::string(s.name));
  j.set("role", Json::string(s.role));
  j.set("dtype", Json::string(dtypeName(s.dtype)));
  Json shape = Json::array();
  for (int64_t d : s.shape)
    shape.push(Json::integer(d));
  j.set("shape", std::move(shape));
  return j;
}

Json Manifest::describe() const {
  Json out = Json::object();
  out.set("model", Json::string(model));
  Json params = Json::array(), state = Json::array(), inputs = Json::array(),
       outputs = Json::array(), entryJson = Json::object();
  std::set<std::string> seenState, seenInputs;
  for (const EntrySpec &e : entries) {
    Json ej = Json::object(), args = Json::array(), results = Json::array();
    for (const TensorSpec &s : e.args) {
      args.push(specJson(s));
      if (isPersistentRole(s.role)) {
        if (seenState.insert(s.name).second)
          (s.role == "param" ? params : state).push(specJson(s));
      } else if (e.name != "init" && seenInputs.insert(s.name).second) {
        inputs.push(specJson(s));
      }
    }
    for (const TensorSpec &s : e.results) {
      results.push(specJson(s));
      if (e.name == "eval")
        outputs.push(specJson(s));
    }
    ej.set("args", std::move(args));
    ej.set("results", std::move(results));
    if (e.arenaBytes > 0)
      ej.set("arena_bytes", Json::integer(e.arenaBytes));
    entryJson.set(e.name, std::move(ej));
  }
  out.set("entries", std::move(entryJson));
  out.set("parameters", std::move(params));
  out.set("state", std::move(state));
  out.set("inputs", std::move(inputs));
  out.set("outputs", std::move(outputs));
  if (!memory.isNull())
    out.set("memory", memory);
  return out;
}

} // namespace tgrt
