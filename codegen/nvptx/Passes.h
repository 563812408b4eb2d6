//===- Passes.h - GPU code generation passes --------------------*- C++ -*-===//
//
// The passes of Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_NVPTX_PASSES_H
#define TGC_CODEGEN_NVPTX_PASSES_H

#include "codegen/nvptx/Registration.h"
#include "dialects/TGDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace tg::nvptx {

#define GEN_PASS_DECL
#include "codegen/nvptx/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/nvptx/Passes.h.inc"

} // namespace tg::nvptx

#endif // TGC_CODEGEN_NVPTX_PASSES_H
