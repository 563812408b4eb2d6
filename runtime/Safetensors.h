//===- Safetensors.h - read and write safetensors files ---------*- C++ -*-===//
//
// The checkpoint and batch format shared with PyTorch and friends: an 8-byte
// little-endian header length, a JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
// {str: str}}, then the data. Every offset, size and dtype is validated
// (buffers must tile the data exactly, as the reference implementation
// requires); errors are one line. Writes are atomic (temp + rename).
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_SAFETENSORS_H
#define TG_RUNTIME_SAFETENSORS_H

#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <string_view>

namespace tgrt {

using Metadata = std::map<std::string, std::string>;

/// Parses a safetensors image; errors are prefixed by nothing (callers add
/// the file name).
bool parseSafetensors(std::string_view bytes, TensorMap &out, std::string &err,
                      Metadata *metadata = nullptr);
/// Reads `path`; errors read "p.safetensors: tensor 'w': data_offsets ...".
bool readSafetensors(const std::string &path, TensorMap &out, std::string &err,
                     Metadata *metadata = nullptr);
/// Serialises tensors (in name order, header padded to 8 bytes).
std::string serializeSafetensors(const TensorMap &tensors,
                                 const Metadata &metadata = {});
/// Writes atomically.
bool writeSafetensors(const std::string &path, const TensorMap &tensors,
                      std::string &err, const Metadata &metadata = {});

} // namespace tgrt

#endif // TG_RUNTIME_SAFETENSORS_H
