//===- AttentionCommon.h - pieces of both attention generators --*- C++ -*-===//
//
// What the sm_80 (mma.sync, AttentionSm80.cpp) and sm_90a (wgmma + TMA,
// AttentionSm90.cpp) attention kernels share: the static problem of one
// attention op, and the register-level code around the matrix products.
// Both hold scores and accumulators in the m16n8 fragment layout (mma.sync's
// C fragment; wgmma's D fragment is the same per warp, repeated over n8
// tiles), so the online softmax, the masks and the stores of the output
// rows are written once here. Internal to codegen/nvptx.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_ATTENTIONCOMMON_H
#define TG_CODEGEN_NVPTX_ATTENTIONCOMMON_H

#include "codegen/nvptx/GemmCommon.h"

#include "mlir/IR/Operation.h"

#include <array>
#include <vector>

namespace tg::nvptx::detail {

/// The static problem of one attention op.
struct AttnShape {
  int64_t bh = 0, tq = 0, tk = 0, d = 0;
  bool causal = false, bf16 = true;
  double scale = 1.0;
  /// Rows of each streamed block: key blocks for the forward and dQ
  /// kernels, query blocks for dK/dV.
  int streamed = 64;
};

/// The shape of a tg.attention or tg.attention_grad the kernels take
/// (attentionKernelRefusal said nothing).
AttnShape attentionShape(mlir::Operation *op);

/// log2(e): both kernels compute the softmax in base 2 (ex2), so scores
/// are scaled by it and the log-sum-exp is stored and read in base e.
inline constexpr double kLog2e = 1.4426950408889634;

/// The four f32 values of one m16n8 accumulator tile a thread holds:
/// (row g, col q2), (g, q2+1), (g+8, q2), (g+8, q2+1).
using Quad = std::array<mlir::Value, 4>;

/// Register-level code shared by the attention kernels. `g` (lane / 4) and
/// `q2` (2 * (lane % 4)) place a thread's fragment values; `bh` is the
/// CTA's (batch, head). The derived generators set them in their prologue.
class AttnBase {
public:
  AttnBase(KernelBuilder &w, const AttnShape &s);

protected:
  /// The quads of an accumulator struct of 4n f32 (n m16n8 tiles).
  std::vector<Quad> quads(mlir::Value acc);
  /// An accumulator struct of type `ty` holding `q`.
  mlir::Value fromQuads(mlir::Type ty, const std::vector<Quad> &q);
  /// `base`'s matrix of this CTA's (batch, head), `rows` x `cols` elements.
  mlir::Value matrix(mlir::Value base, int64_t rows, int64_t cols, mlir::Type e);
  mlir::Value ex2(mlir::Value x);
  mlir::Value shflXor(mlir::Value x, int m);
  mlir::Value fmax(mlir::Value x, mlir::Value y);
  mlir::Value fsub(mlir::Value x, mlir::Value y);
  /// Leaves the scf.if the builder is in (KernelBuilder::openIf).
  void closeIf();
  /// Whether (query, key) is a score of the problem: both in range and,
  /// with `causal`, key <= query.
  mlir::Value validKey(mlir::Value query, mlir::Value key);

  /// One key block of the forward pass's online softmax (FlashAttention-2,
  /// base 2): `x` holds the raw scores of this thread's fragment (tiles of
  /// 8 keys from `col0` + q2, rows `row` and row + 8) and becomes the
  /// unnormalised probabilities; m and l (per row h = 0, 1: the running max
  /// of the scaled scores and this thread's partial sum) are updated, and
  /// `alpha` is the factor by which the output accumulated so far must be
  /// rescaled.
  void onlineSoftmax(std::vector<Quad> &x, mlir::Value row, mlir::Value col0,
                     mlir::Value m[2], mlir::Value l[2], mlir::Value alpha[2]);
  /// rowsum(dO * O) of row `row` of the `[rows, d]` matrices `gdO` and `gO`
  /// (FlashAttention-2's D before dLSE is subtracted), over the `perRow`
  /// consecutive lanes that share the row: this one reads part `part`, d /
  /// perRow contiguous columns as 16-byte vectors, and every one of them
  /// gets the row's sum (butterfly shuffles).
  mlir::Value rowDot(mlir::Value gdO, mlir::Value gO, mlir::Value row,
                     mlir::Value part, int perRow);
  /// Multiplies the rows of `acc` by alpha (row g: alpha[0], g+8: alpha[1]).
  void rescale(std::vector<Quad> &acc, const mlir::Value alpha[2]);
  /// After the last key block: reduces the partial sums over the quad of
  /// threads holding a row, and stores O = acc / l (rows `row`, row + 8)
  /// and the log-sum-exp m ln 2 + log l.
  void storeOutput(mlir::Value o, mlir::Value lse, mlir::Value row,
                   const std::vector<Quad> &acc, const mlir::Value m[2],
                   const mlir::Value l[2]);
  /// Stores the tiles `acc` (rows `row` and row + 8, d columns) times
  /// `mulA` (row) and `mulB` (row + 8) to `mat`, rows below `rowBound`.
  void storeRows(mlir::Value mat, int64_t rowBound, mlir::Value row,
                 const std::vector<Quad> &acc, mlir::Value mulA, mlir::Value mulB);

  KernelBuilder &w;
  mlir::OpBuilder &b;
  mlir::Location loc;
  AttnShape s;
  mlir::Type elt;
  /// scale * log2(e): scores in base 2.
  double c2 = 1.0;
  mlir::Value lane, g, q2, bh;
};

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_ATTENTIONCOMMON_H
