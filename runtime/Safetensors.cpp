//===- Safetensors.cpp - read and write safetensors files -----------------===//
//
// Validation follows the reference implementation (huggingface/safetensors):
// header length bounded (100 MB) and inside the file, header a JSON object,
// known dtypes, data_offsets consistent with shape x dtype size, and the
// buffers covering the data section exactly, without holes or overlap.
//
//===----------------------------------------------------------------------===//
#include "runtime/Safetensors.h"
#include "runtime/Artifact.h"
#include "runtime/Json.h"

#include <algorithm>
#include <cstring>

namespace tgrt {

namespace {
constexpr uint64_t kMaxHeader = 100'000'000;
}

bool parseSafetensors(std::string_view bytes, TensorMap &out, std::string &err,
                      Metadata *metadata) {
  if (bytes.size() < 8) {
    err = "truncated: " + std::to_string(bytes.size()) +
          " bytes, a safetensors file has at least 8";
    return false;
  }
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (n > kMaxHeader) {
    err = "header length " + std::to_string(n) + " exceeds the limit of " +
          std::to_string(kMaxHeader) + " bytes";
    return false;
  }
  if (n > bytes.size() - 8) {
    err = "truncated: the header needs " + std::to_string(n) +
          " bytes but only " + std::to_string(bytes.size() - 8) + " follow";
    return false;
  }
  Json header;
  if (!Json::parse(bytes.substr(8, n), header, err)) {
    err = "invalid JSON header: " + err;
    return false;
  }
  if (!header.isObject()) {
    err = "the header is not a JSON object";
    return false;
  }
  std::string_view data = bytes.substr(8 + n);
  struct Extent {
    uint64_t begin, end;
    const std::string *name;
  };
  std::vector<Extent> extents;
  TensorMap result;
  for (const auto &member : header.members()) {
    const std::string &name = member.first;
    const Json &j = member.second;
    if (name == "__metadata__") {
      if (!j.isObject()) {
        err = "__metadata__ is not an object";
        return false;
      }
      for (const auto &[k, v] : j.members()) {
        if (!v.isString()) {
          err = "__metadata__." + k + " is not a string";
          return false;
        }
        if (metadata)
          (*metadata)[k] = v.asString();
      }
      continue;
    }
    auto fail = [&](const std::string &msg) {
      err = "tensor '" + name + "': " + msg;
      return false;
    };
    if (!j.isObject())
      return fail("expected an object");
    const Json *dtype = j.get("dtype"), *shape = j.get("shape"),
               *offsets = j.get("data_offsets");
    Tensor t;
    if (!dtype || !dtype->isString())
      return fail("dtype: expected a string");
    if (!parseSafetensorsDType(dtype->asString(), t.dtype))
      return fail("dtype '" + dtype->asString() +
                  "' is not supported (F32, F64, BF16, F16, I32, I64, BOOL)");
    if (!shape || !shape->isArray())
      return fail("shape: expected an array");
    for (const Json &d : shape->items()) {
      if (!d.isInt() || d.asInt() < 0)
        return fail("shape: dimensions must be non-negative integers");
      t.shape.push_back(d.asInt());
    }
    uint64_t numel;
    if (!shapeNumel(t.shape, numel))
      return fail("shape " + shapeString(t.shape) + " has too many elements");
    if (!offsets || !offsets->isArray() || offsets->items().size() != 2 ||
        !offsets->items()[0].isInt() || !offsets->items()[1].isInt() ||
        offsets->items()[0].asInt() < 0 || offsets->items()[1].asInt() < 0)
      return fail("data_offsets: expected [begin, end] with non-negative "
                  "integers");
    uint64_t begin = offsets->items()[0].asInt(),
             end = offsets->items()[1].asInt();
    if (begin > end)
      return fail("data_offsets [" + std::to_string(begin) + ", " +
                  std::to_string(end) + "] end before they begin");
    if (end > data.size())
      return fail("truncated: data ends at byte " + std::to_string(end) +
                  " of the data section but it has " +
                  std::to_string(data.size()) + " bytes");
    uint64_t want = numel * dtypeSize(t.dtype);
    if (end - begin != want)
      return fail("data_offsets span " + std::to_string(end - begin) +
                  " bytes but " + dtypeSafetensorsName(t.dtype) +
                  shapeString(t.shape) + " needs " + std::to_string(want));
    t.bytes.assign(data.begin() + begin, data.begin() + end);
    auto [it, fresh] = result.emplace(name, std::move(t));
    extents.push_back({begin, end, &it->first});
  }
  std::sort(extents.begin(), extents.end(),
            [](const Extent &a, const Extent &b) {
              if (a.begin != b.begin)
                return a.begin < b.begin;
              return a.end != b.end ? a.end < b.end : *a.name < *b.name;
            });
  uint64_t at = 0;
  for (const Extent &e : extents) {
    if (e.begin != at) {
      err = "tensor '" + *e.name + "': data_offsets begin at " +
            std::to_string(e.begin) + " but the previous tensor ends at " +
            std::to_string(at) + " (buffers must not overlap or leave holes)";
      return false;
    }
    at = e.end;
  }
  if (at != data.size()) {
    err = "the data section has " + std::to_string(data.size()) +
          " bytes but the tensors cover " + std::to_string(at);
    return false;
  }
  out = std::move(result);
  return true;
}

bool readSafetensors(const std::string &path, TensorMap &out, std::string &err,
                     Metadata *metadata) {
  std::string bytes;
  if (!readFile(path, bytes, err))
    return false;
  if (!parseSafetensors(bytes, out, err, metadata)) {
    err = path + ": " + err;
    return false;
  }
  return true;
}

std::string serializeSafetensors(const TensorMap &tensors,
                                 const Metadata &metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto &[k, v] : metadata)
      m.set(k, Json::string(v));
    header.set("__metadata__", std::move(m));
  }
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    Json e = Json::object(), shape = Json::array(), offs = Json::array();
    e.set("dtype", Json::string(dtypeSafetensorsName(t.dtype)));
    for (int64_t d : t.shape)
      shape.push(Json::integer(d));
    e.set("shape", std::move(shape));
    offs.push(Json::integer(static_cast<int64_t>(offset)));
    offset += t.bytes.size();
    offs.push(Json::integer(static_cast<int64_t>(offset)));
    e.set("data_offsets", std::move(offs));
    header.set(name, std::move(e));
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>(uint64_t(h.size()) >> (8 * i));
  out += h;
  out.reserve(out.size() + offset);
  for (const auto &[name, t] : tensors)
    out.append(reinterpret_cast<const char *>(t.bytes.data()), t.bytes.size());
  return out;
}

bool writeSafetensors(const std::string &path, const TensorMap &tensors,
                      std::string &err, const Metadata &metadata) {
  return writeFileAtomic(path, serializeSafetensors(tensors, metadata), err);
}

} // namespace tgrt
