//===- Checkpoint.cpp - pretrained weights into a model -------------------===//
//
// The parameter list comes from the manifest (a persistent-role argument of
// any entry), not from Executor::state(), which would copy the optimizer
// state too: for GPT-2 small that is a gigabyte nobody reads here.
//
//===----------------------------------------------------------------------===//
#include "runtime/Checkpoint.h"

#include "runtime/Safetensors.h"

#include <map>

namespace tgrt {

bool isKnownBuffer(std::string_view name) {
  for (std::string_view suffix : {".attn.bias", ".attn.masked_bias"})
    if (name.size() > suffix.size() &&
        name.substr(name.size() - suffix.size()) == suffix)
      return true;
  return false;
}

bool initFromCheckpoint(Executor &ex, const std::string &path,
                        std::string &err) {
  std::map<std::string, const TensorSpec *> params;
  for (const EntrySpec &e : ex.manifest().entries)
    for (const TensorSpec &s : e.args)
      if (s.role == "param")
        params.emplace(s.name, &s);
  TensorMap file;
  if (!readSafetensors(path, file, err))
    return false;
  auto fail = [&](const std::string &msg) {
    err = path + ": " + msg;
    return false;
  };
  // Unknown names first: a file for another model fails on its first odd
  // key rather than on a long list of missing parameters.
  for (const auto &[name, t] : file)
    if (!params.count(name) && !isPersistentRole(ex.roleOf(name)) &&
        !isKnownBuffer(name))
      return fail("tensor '" + name + "' (" + dtypeName(t.dtype) +
                  shapeString(t.shape) + ") is not a parameter of the model");
  for (const auto &[name, spec] : params) {
    auto it = file.find(name);
    if (it == file.end())
      return fail("parameter '" + name + "' (" + dtypeName(spec->dtype) +
                  shapeString(spec->shape) + ") is missing");
    const Tensor &t = it->second;
    if (t.shape != spec->shape || !isFloat(t.dtype))
      return fail("tensor '" + name + "' is " + dtypeName(t.dtype) +
                  shapeString(t.shape) + " but the model's parameter is " +
                  dtypeName(spec->dtype) + shapeString(spec->shape));
    Tensor value;
    if (!convertTensor(t, spec->dtype, spec->shape, value, err) ||
        !ex.setState(name, value, err))
      return fail(err);
  }
  return true;
}

} // namespace tgrt
