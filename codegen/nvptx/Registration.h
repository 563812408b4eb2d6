//===- Registration.h - register the GPU backend's passes -------*- C++ -*-===//
//
// A header free of generated code, so that codegen/registry can register
// the NVPTX passes without depending on codegen/nvptx's tablegen.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_NVPTX_REGISTRATION_H
#define TGC_CODEGEN_NVPTX_REGISTRATION_H

namespace tg::nvptx {

/// Registers tg-configure-gemms and tg-configure-row-reductions.
void registerNvptxPasses();

} // namespace tg::nvptx

#endif // TGC_CODEGEN_NVPTX_REGISTRATION_H
