//===- Checkpoint.h - pretrained weights into a model -----------*- C++ -*-===//
//
// `tg-run --init-from FILE.safetensors` starts training from weights someone
// else trained (the released GPT-2, for one) instead of init(seed). Such a
// file holds parameters under the model's names and, from PyTorch, buffers
// that are not parameters; it never holds our optimizer state. This is
// stricter than a typo-tolerant loader on purpose: a key that matches
// nothing is refused by name, so a renamed layer cannot silently keep its
// random initial values.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_CHECKPOINT_H
#define TG_RUNTIME_CHECKPOINT_H

#include "runtime/Executor.h"

#include <string>
#include <string_view>

namespace tgrt {

/// True for the non-parameter buffers a PyTorch GPT-2 checkpoint carries:
/// `<block>.attn.bias` (the causal mask) and `<block>.attn.masked_bias` (the
/// value masked scores take). The model computes both, so they are skipped.
bool isKnownBuffer(std::string_view name);

/// Sets every parameter of `ex` from the safetensors file `path`. Each one
/// must be present with the parameter's shape; a floating-point tensor of
/// another precision (an f16 or bf16 release) is converted. Optimizer state
/// and step keep their values (a fine-tune starts a fresh optimizer), and
/// tensors of those names in the file are skipped, as are known buffers
/// (isKnownBuffer). Any other tensor is an error that names it. Errors are
/// one line starting with `path`; on error some parameters may be set.
bool initFromCheckpoint(Executor &ex, const std::string &path,
                        std::string &err);

} // namespace tgrt

#endif // TG_RUNTIME_CHECKPOINT_H
