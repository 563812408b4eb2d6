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
  if (!parseJson(bytes.substr(8, n), header, err)) {
    err = "invalid JSON header: " + err;
    return false;
  }
  if (!header.is_object()) {
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
  for (const auto &member : header.items()) {
    const std::string &name = member.key();
    const Json &j = member.value();
    if (name == "__metadata__") {
      if (!j.is_object()) {
        err = "__metadata__ is not an object";
        return false;
      }
      for (const auto &[k, v] : j.items()) {
        if (!v.is_string()) {
          err = "__metadata__." + k + " is not a string";
          return false;
        }
        if (metadata)
          (*metadata)[k] = v.get<std::string>();
      }
      continue;
    }
    auto fail = [&](const std::string &msg) {
      err = "tensor '" + name + "': " + msg;
      return false;
    };
    if (!j.is_object())
      return fail("expected an object");
    const Json *dtype = jsonGet(j, "dtype"), *shape = jsonGet(j, "shape"),
               *offsets = jsonGet(j, "data_offsets");
    Tensor t;
    if (!dtype || !dtype->is_string())
      return fail("dtype: expected a string");
    const std::string &dtypeText = dtype->get_ref<const std::string &>();
    if (!parseSafetensorsDType(dtypeText, t.dtype))
      return fail("dtype '" + dtypeText +
                  "' is not supported (F32, F64, BF16, F16, I32, I64, BOOL)");
    if (!shape || !shape->is_array())
      return fail("shape: expected an array");
    for (const Json &d : *shape) {
      std::optional<int64_t> dim = jsonInt(d);
      if (!dim || *dim < 0)
        return fail("shape: dimensions must be non-negative integers");
      t.shape.push_back(*dim);
    }
    uint64_t numel;
    if (!shapeNumel(t.shape, numel))
      return fail("shape " + shapeString(t.shape) + " has too many elements");
    std::optional<int64_t> first, last;
    if (offsets && offsets->is_array() && offsets->size() == 2) {
      first = jsonInt((*offsets)[0]);
      last = jsonInt((*offsets)[1]);
    }
    if (!first || !last || *first < 0 || *last < 0)
      return fail("data_offsets: expected [begin, end] with non-negative "
                  "integers");
    uint64_t begin = *first, end = *last;
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
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    uint64_t begin = offset;
    offset += t.bytes.size();
    header[name] = Json{{"dtype", dtypeSafetensorsName(t.dtype)},
                        {"shape", t.shape},
                        {"data_offsets", {begin, offset}}};
  }
  std::string h = dumpJson(header);
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
