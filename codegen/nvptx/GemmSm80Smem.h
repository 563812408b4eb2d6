//===- GemmSm80Smem.h - the sm_80 GEMM's shared-memory layout ---*- C++ -*-===//
//
// Which operands the sm_80 mma.sync kernel (GemmSm80.cpp) loads through
// aligned windows, and the shared memory each operand takes: shared by the
// generator, which lays the operands out, and launchGeometry
// (GemmConfig.cpp), which sizes the launch. See docs/nvptx.md, "Ragged
// shapes".
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_GEMMSM80SMEM_H
#define TG_CODEGEN_NVPTX_GEMMSM80SMEM_H

#include "codegen/nvptx/GemmConfig.h"

namespace tg::nvptx {

/// True when operand A (`a`) or B is stored K-major ([MN][K]: A in NN and
/// NT, B in NT).
bool operandKMajor(const GemmProblem &p, bool a);
/// True when the contiguous dimension of operand A (`a`) or B is odd (rows
/// only 2-byte aligned, under cp.async's 4-byte minimum): the sm_80 kernel
/// copies such rows through 16-byte aligned windows and realigns them in
/// shared memory.
bool rowsOdd(const GemmProblem &p, bool a);
/// Dynamic shared memory the sm_80 kernel gives operand A (`a`) or B: a
/// `stages`-deep ring of its tiles, or for odd rows (rowsOdd) the one tile
/// ldmatrix reads plus a `stages`-deep ring of windows, each row one
/// 16-byte chunk wider than the tile's.
int sm80OperandSmemBytes(const GemmProblem &p, const TileConfig &c, bool a);
/// CTAs of the sm_80 kernel an A100 SM holds at once, as its shared memory
/// (164 KiB, 1 KiB reserved per CTA) and threads (2048) allow: the kernel's
/// `nvvm.minctasm`, so that ptxas sizes registers for the occupancy shared
/// memory already caps instead of its own (64 registers at 128 threads,
/// where the ldmatrix/mma register quads spilled).
int sm80ResidentCtas(const GemmProblem &p, const TileConfig &c);

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_GEMMSM80SMEM_H
