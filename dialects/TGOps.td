//===- TGOps.td - tg operations ----------------------------*- tablegen -*-===//
//
// Every op of the tg dialect, each documented where it is defined. Shape and
// element-type rules live in the C++ inferReturnTypes/verify functions of
// TGOps.cpp so that each error names the shapes involved.
//
//===----------------------------------------------------------------------===//

#ifndef TG_OPS_TD
#define TG_OPS_TD

include "dialects/TGAttrs.td"
include "dialects/TGInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def TG_FloatElt : AnyTypeOf<[F32, BF16, F16, F64]>;
def TG_IntElt : AnyTypeOf<[I32, I64]>;
def TG_Tensor : StaticShapeTensorOf<[F32, BF16, F16, F64, I32, I64, I1]>;
def TG_NumTensor : StaticShapeTensorOf<[F32, BF16, F16, F64, I32, I64]>;
def TG_FloatTensor : StaticShapeTensorOf<[F32, BF16, F16, F64]>;
def TG_IntTensor : StaticShapeTensorOf<[I32, I64]>;
def TG_BoolTensor : StaticShapeTensorOf<[I1]>;
def TG_Seed : 0DTensorOf<[I64]>;

def TG_Differentiable : DeclareOpInterfaceMethods<TG_DifferentiableOpInterface>;

def TG_Pair : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>]>;

//===----------------------------------------------------------------------===//
// Elementwise binary ops with NumPy broadcasting
//===----------------------------------------------------------------------===//

class TG_BinaryOp<string mnemonic, string desc, TypeConstraint operandTy = TG_NumTensor>
    : TG_Op<mnemonic, [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise " # desc # " with NumPy broadcasting";
  let description = [{
    Computes `}] # desc # [{` elementwise. Shapes broadcast as in NumPy: they
    are aligned at the right, and each pair of dimensions is equal or one of
    them is 1. Both operands have the same element type.

    ```mlir
    %r = tg.}] # mnemonic # [{ %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins operandTy:$lhs, operandTy:$rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferBroadcastResult(loc, adaptor.getOperands(), /*resultElt=*/{},
                                  types);
    }
  }];
}

def TG_AddOp : TG_BinaryOp<"add", "addition"> {
  let hasFolder = 1;
}
def TG_SubOp : TG_BinaryOp<"sub", "subtraction">;
def TG_MulOp : TG_BinaryOp<"mul", "multiplication"> {
  let hasFolder = 1;
}
def TG_DivOp : TG_BinaryOp<"div", "division">;
def TG_PowOp : TG_BinaryOp<"pow", "power (lhs raised to rhs)", TG_FloatTensor>;
def TG_MaximumOp : TG_BinaryOp<"maximum", "maximum">;
def TG_MinimumOp : TG_BinaryOp<"minimum", "minimum">;

def TG_CmpOp : TG_Op<"cmp", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise comparison with broadcasting, giving i1";
  let description = [{
    Compares elementwise with the predicate `eq`, `ne`, `lt`, `le`, `gt` or
    `ge`; shapes broadcast as in `tg.add`. The result has element type i1 and
    feeds `tg.select`.

    ```mlir
    %m = tg.cmp lt %a, %b : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xi1>
    ```
  }];
  let arguments = (ins TG_CmpPredicate:$predicate, TG_NumTensor:$lhs,
                       TG_NumTensor:$rhs);
  let results = (outs TG_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def TG_SelectOp : TG_Op<"select", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise choice between two tensors, with broadcasting";
  let description = [{
    `cond ? true_value : false_value` elementwise; all three broadcast
    together. This is the masked fill of attention and of `ignore_index`.

    ```mlir
    %r = tg.select %m, %a, %b : tensor<4x3xi1>, tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins TG_BoolTensor:$cond, TG_Tensor:$true_value,
                       TG_Tensor:$false_value);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $cond `,` $true_value `,` $false_value attr-dict `:` type($cond) `,`
    type($true_value) `,` type($false_value) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class TG_UnaryOp<string mnemonic, string formula, TypeConstraint ty = TG_FloatTensor,
                 list<Trait> traits = []>
    : TG_Op<mnemonic, !listconcat([TG_Differentiable, Pure, SameOperandsAndResultType], traits)> {
  let summary = "elementwise " # formula;
  let description = [{
    Computes `}] # formula # [{` for every element; the result has the
    operand's type.

    ```mlir
    %r = tg.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ty:$input);
  let results = (outs ty:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def TG_NegOp : TG_UnaryOp<"neg", "-x", TG_NumTensor>;
def TG_AbsOp : TG_UnaryOp<"abs", "|x|", TG_NumTensor>;
def TG_ExpOp : TG_UnaryOp<"exp", "e^x">;
def TG_LogOp : TG_UnaryOp<"log", "ln(x)">;
def TG_SqrtOp : TG_UnaryOp<"sqrt", "sqrt(x)">;
def TG_RsqrtOp : TG_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def TG_TanhOp : TG_UnaryOp<"tanh", "tanh(x)">;
def TG_ErfOp : TG_UnaryOp<"erf", "erf(x), the Gauss error function">;
def TG_CosOp : TG_UnaryOp<"cos", "cos(x)">;
def TG_SinOp : TG_UnaryOp<"sin", "sin(x)">;
def TG_SigmoidOp : TG_UnaryOp<"sigmoid", "1 / (1 + e^-x)">;
def TG_ReluOp : TG_UnaryOp<"relu", "max(x, 0)", TG_NumTensor>;
def TG_SiluOp : TG_UnaryOp<"silu", "x * sigmoid(x)">;

def TG_GeluOp : TG_Op<"gelu", [TG_Differentiable, Pure, SameOperandsAndResultType]> {
  let summary = "elementwise GELU, exact (erf) or tanh-approximated";
  let description = [{
    `x * Phi(x)` with the normal CDF `Phi`. `approximate = tanh` selects
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, GPT-2's form.

    ```mlir
    %r = tg.gelu %x approximate = tanh : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
      DefaultValuedAttr<TG_GeluApproximation, "GeluApproximation::none">:$approximate);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` `=` $approximate^)? attr-dict `:` type($input)
  }];
}

def TG_CastOp : TG_Op<"cast", [TG_Differentiable, Pure, SameOperandsAndResultShape]> {
  let summary = "element type conversion";
  let description = [{
    Converts every element to the result's element type (rounding to nearest
    even for floats, truncation toward zero for float to integer).

    ```mlir
    %r = tg.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def TG_ConstantOp : TG_Op<"constant", [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "a constant tensor";
  let description = [{
    ```mlir
    %c = tg.constant dense<5.000000e-01> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_Op<"matmul", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "matrix product, 2-D or batched, optionally transposed operands";
  let description = [{
    `op(lhs) @ op(rhs)` where `op` transposes the last two dimensions when
    `transpose_lhs` / `transpose_rhs` is set. Leading (batch) dimensions
    broadcast as in NumPy's `matmul`.

    ```mlir
    %c = tg.matmul %a, %b {transpose_rhs} : tensor<8x64x32xf32>, tensor<16x32xf32> -> tensor<8x64x16xf32>
    ```
  }];
  let arguments = (ins TG_NumTensor:$lhs, TG_NumTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs TG_NumTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

class TG_ReduceOp<string mnemonic, string what, TypeConstraint ty = TG_NumTensor>
    : TG_Op<mnemonic, [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = what # " over a list of axes";
  let description = [{
    Reduces `input` over `axes` (distinct, in `[0, rank)`), computing the }]
    # what # [{. With `keepdims` the reduced dimensions stay as size 1.

    ```mlir
    %r = tg.}] # mnemonic # [{ %x axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins ty:$input, DenseI64ArrayAttr:$axes, UnitAttr:$keepdims);
  let results = (outs ty:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes (`keepdims` $keepdims^)? attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferReduceResult(loc, adaptor.getInput(), adaptor.getAxes(),
                               adaptor.getKeepdims(), types);
    }
  }];
}

def TG_SumOp : TG_ReduceOp<"sum", "sum">;
def TG_MeanOp : TG_ReduceOp<"mean", "arithmetic mean", TG_FloatTensor>;
def TG_MaxOp : TG_ReduceOp<"max", "maximum">;

//===----------------------------------------------------------------------===//
// Normalisations and losses (composite ops; see tg-decompose)
//===----------------------------------------------------------------------===//

class TG_SoftmaxLikeOp<string mnemonic, string formula>
    : TG_Op<mnemonic, [TG_Differentiable, Pure, SameOperandsAndResultType]> {
  let summary = formula # " along one axis";
  let description = [{
    Computes `}] # formula # [{` along `axis` (negative values count from
    the end), in a numerically stable way (the maximum is subtracted first).

    ```mlir
    %p = tg.}] # mnemonic # [{ %x axis = -1 : tensor<4x10xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, I64Attr:$axis);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def TG_SoftmaxOp : TG_SoftmaxLikeOp<"softmax", "exp(x) / sum(exp(x))">;
def TG_LogSoftmaxOp : TG_SoftmaxLikeOp<"log_softmax", "x - log(sum(exp(x)))">;

def TG_CrossEntropyOp : TG_Op<"cross_entropy", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "mean cross-entropy of logits against integer labels";
  let description = [{
    `logits` has shape `[..., C]` and `labels` the leading shape `[...]`.
    The result is the mean, over the positions whose label is not
    `ignore_index` (default -100), of `-log_softmax(logits)[label]`; it is 0
    when every position is ignored.

    ```mlir
    %l = tg.cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$logits, TG_IntTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
}

def TG_MseLossOp : TG_Op<"mse_loss", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "mean squared error";
  let description = [{
    `mean((input - target)^2)` over every element; both have the same type.

    ```mlir
    %l = tg.mse_loss %y, %t : tensor<32x1xf32>, tensor<32x1xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$target);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $target attr-dict `:` type($input) `,` type($target) `->` type($result)
  }];
}

def TG_LayerNormOp : TG_Op<"layer_norm",
    [TG_Differentiable, Pure, AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + eps) * scale + bias` with mean and (biased)
    variance over the last dimension; `scale` and `bias` have shape `[D]` and
    are optional.

    ```mlir
    %y = tg.layer_norm %x scale(%g : tensor<768xf32>) bias(%b : tensor<768xf32>) {eps = 1.0e-05 : f64} : tensor<8x768xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, Optional<TG_FloatTensor>:$scale,
                       Optional<TG_FloatTensor>:$bias,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `:` type($scale) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def TG_RmsNormOp : TG_Op<"rms_norm", [TG_Differentiable, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalisation over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + eps) * scale` over the last dimension; `scale` has
    shape `[D]` and is optional.

    ```mlir
    %y = tg.rms_norm %x scale(%g : tensor<512xf32>) : tensor<8x512xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, Optional<TG_FloatTensor>:$scale,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `:` type($scale) `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention (fused; see docs/attention.md). Its own section, apart from the
// ops appended at the end of the file.
//===----------------------------------------------------------------------===//

def TG_AttentionOp : TG_Op<"attention", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "scaled dot-product attention, optionally causal";
  let description = [{
    With `query` `[B, H, Tq, d]`, `key` `[B, H, Tk, d]` and `value`
    `[B, H, Tk, dv]`: `S = scale * query @ key^T`, with `S[..., i, j] = -inf`
    where `j > i` when `causal` is set (as `tg.causal_mask`),
    `output = softmax(S) @ value` (`[B, H, Tq, dv]`) and the per-row
    log-sum-exp `lse = log(sum_j exp(S[..., i, j]))` (`[B, H, Tq]`, in f32
    for bf16/f16 inputs). The backward pass (`tg.attention_grad`) needs only
    `output` and `lse`, never the `Tq x Tk` probabilities.

    ```mlir
    %o, %lse = tg.attention %q, %k, %v {causal, scale = 1.250000e-01 : f64} : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32> -> tensor<2x4x16x64xf32>, tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$query, TG_FloatTensor:$key,
                       TG_FloatTensor:$value, UnitAttr:$causal, F64Attr:$scale);
  let results = (outs TG_FloatTensor:$output, TG_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,`
    type($value) `->` type($output) `,` type($lse)
  }];
}

def TG_AttentionGradOp : TG_Op<"attention_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "cotangents of tg.attention's query, key and value";
  let description = [{
    Given the cotangents of a `tg.attention`'s `output` and `lse` and its
    operands, `output` and `lse` (same `causal` and `scale`), computes the
    cotangents of `query`, `key` and `value` by recomputing the
    probabilities `P = exp(S - lse)` (FlashAttention-2):
    `dV = P^T dO`, `dS = P * (dO V^T - rowsum(dO * O) + dLSE)`,
    `dQ = scale * dS K`, `dK = scale * dS^T Q`. Not differentiable.

    ```mlir
    %dq, %dk, %dv = tg.attention_grad %do, %dlse, %q, %k, %v, %o, %lse {causal, scale = 1.250000e-01 : f64} : tensor<2x4x16x64xf32>, tensor<2x4x16xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16xf32> -> tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad_output, TG_FloatTensor:$grad_lse,
                       TG_FloatTensor:$query, TG_FloatTensor:$key,
                       TG_FloatTensor:$value, TG_FloatTensor:$output,
                       TG_FloatTensor:$lse, UnitAttr:$causal, F64Attr:$scale);
  let results = (outs TG_FloatTensor:$grad_query, TG_FloatTensor:$grad_key,
                      TG_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $grad_output `,` $grad_lse `,` $query `,` $key `,` $value `,` $output `,`
    $lse attr-dict `:` type($grad_output) `,` type($grad_lse) `,`
    type($query) `,` type($key) `,` type($value) `,` type($output) `,`
    type($lse) `->` type($grad_query) `,` type($grad_key) `,` type($grad_value)
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def TG_EmbeddingOp : TG_Op<"embedding", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "row gather from an embedding table";
  let description = [{
    `result[i..., :] = table[indices[i...], :]`. Indices outside `[0, V)`
    are clamped.

    ```mlir
    %e = tg.embedding %wte, %ids : tensor<50257x768xf32>, tensor<8x1024xi64> -> tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$table, TG_IntTensor:$indices);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` type($table) `,` type($indices) `->` type($result)
  }];
}

def TG_ReshapeOp : TG_Op<"reshape", [TG_Differentiable, Pure]> {
  let summary = "same elements, new static shape";
  let description = [{
    Reinterprets the elements (row-major) with the result's shape; the
    element count and type are unchanged.

    ```mlir
    %r = tg.reshape %x : tensor<8x1024x768xf32> to tensor<8192x768xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_TransposeOp : TG_Op<"transpose", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "permutation of dimensions";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`.

    ```mlir
    %t = tg.transpose %x perm = [0, 2, 1, 3] : tensor<8x64x12x64xf32> -> tensor<8x12x64x64xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `perm` `=` $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def TG_BroadcastToOp : TG_Op<"broadcast_to", [TG_Differentiable, Pure]> {
  let summary = "explicit NumPy broadcast to a larger shape";
  let description = [{
    ```mlir
    %b = tg.broadcast_to %x : tensor<1x768xf32> to tensor<8x768xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_SliceOp : TG_Op<"slice", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "strided slice with static bounds";
  let description = [{
    Along every dimension `d`, keeps indices `start[d], start[d] + step[d],
    ...` below `limit[d]`, with `0 <= start <= limit <= size` and `step >= 1`.

    ```mlir
    %s = tg.slice %x start [0, 768] limit [8, 1536] step [1, 1] : tensor<8x2304xf32> -> tensor<8x768xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$step);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `start` $start `limit` $limit `step` $step attr-dict `:` type($input) `->` type($result)
  }];
}

def TG_ConcatOp : TG_Op<"concat", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "concatenation along one axis";
  let description = [{
    All inputs have the same rank and element type, and equal sizes except
    along `axis`.

    ```mlir
    %c = tg.concat %a, %b axis = 1 : tensor<4x2xf32>, tensor<4x3xf32> -> tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Masking and randomness
//===----------------------------------------------------------------------===//

def TG_CausalMaskOp : TG_Op<"causal_mask", [TG_Differentiable, Pure, SameOperandsAndResultType]> {
  let summary = "fill the strictly upper triangle of the last two dims";
  let description = [{
    `result[..., i, j] = j > i ? value : input[..., i, j]`: the causal mask of
    self-attention scores. `value` defaults to -inf.

    ```mlir
    %m = tg.causal_mask %scores : tensor<8x12x64x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
      DefaultValuedAttr<F64Attr, "-::std::numeric_limits<double>::infinity()">:$value);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def TG_DropoutOp : TG_Op<"dropout", [TG_Differentiable, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "inverted dropout with a counter-based RNG";
  let description = [{
    Multiplies each element by 0 with probability `p` and by `1 / (1 - p)`
    otherwise (so a dropped inf or NaN is NaN, as in PyTorch). The mask is a pure function of (`seed`, `stream`, element
    index) through a counter-based generator (Philox-4x32-10), so the
    backward pass and rematerialisation see the same mask. `stream` tells
    dropout ops apart within one step.

    ```mlir
    %d = tg.dropout %x, %seed {p = 1.0e-01 : f64, stream = 3 : i64} : tensor<8x768xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_Seed:$seed, F64Attr:$p,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $seed attr-dict `:` type($input) `,` type($seed)
  }];
  let hasVerifier = 1;
}

def TG_RandomDistribution : I32EnumAttr<"RandomDistribution",
    "distribution of tg.random", [
    I32EnumAttrCase<"uniform", 0>, I32EnumAttrCase<"normal", 1>]> {
  let cppNamespace = "::mlir::tg";
}

def TG_RandomOp : TG_Op<"random", [Pure]> {
  let summary = "a tensor of counter-based random numbers";
  let description = [{
    Fills the result with independent draws from `uniform(a, b)` or
    `normal(mean = a, std = b)`. Element `i` is a pure function of (`seed`,
    `stream`, `i`) through Philox-4x32-10 (see `include/tgc/Philox.h`), so
    parameter initialisation is reproducible from one seed and does not
    depend on the order in which tensors are filled.

    ```mlir
    %w = tg.random normal %seed {a = 0.0 : f64, b = 2.0e-02 : f64, stream = 7 : i64} : tensor<i64> -> tensor<768x768xf32>
    ```
  }];
  let arguments = (ins TG_RandomDistribution:$distribution, TG_Seed:$seed,
                       F64Attr:$a, F64Attr:$b, I64Attr:$stream);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $distribution $seed attr-dict `:` type($seed) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_OneHotOp : TG_Op<"one_hot", [Pure]> {
  let summary = "integer indices to one-hot vectors";
  let description = [{
    `result[i..., c] = (indices[i...] == c) ? 1 : 0`; the number of classes
    is the result's last dimension.

    ```mlir
    %o = tg.one_hot %labels : tensor<32xi64> -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins TG_IntTensor:$indices);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Communication between ranks (data parallelism, docs/data-parallel.md)
//===----------------------------------------------------------------------===//

include "dialects/TGCommOps.td"

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

def TG_Conv2dOp : TG_Op<"conv2d", [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "2-D convolution, NCHW input, OIHW weight";
  let description = [{
    `input` is `[N, C, H, W]`, `weight` is `[O, C / groups, KH, KW]`;
    `stride`, `padding` (zeros, both sides) and `dilation` are (h, w) pairs.
    The output is `[N, O, (H + 2p - d (KH - 1) - 1) / s + 1, ...]`.

    ```mlir
    %y = tg.conv2d %x, %w {padding = array<i64: 2, 2>} : tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<8x6x28x28xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       DefaultValuedAttr<TG_Pair, "{1, 1}">:$stride,
                       DefaultValuedAttr<TG_Pair, "{0, 0}">:$padding,
                       DefaultValuedAttr<TG_Pair, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
}

class TG_PoolOp<string mnemonic, string what, string paddingRule,
                dag extraArgs = (ins)>
    : TG_Op<mnemonic, [TG_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "2-D " # what # " pooling over NCHW";
  let description = [{
    Takes the }] # what # [{ of each `kernel` window, moved by `stride`, with
    `padding` on both sides. }] # paddingRule # [{

    ```mlir
    %p = tg.}] # mnemonic # [{ %x kernel = [2, 2] stride = [2, 2] : tensor<8x6x28x28xf32> -> tensor<8x6x14x14xf32>
    ```
  }];
  let arguments = !con((ins TG_FloatTensor:$input, TG_Pair:$kernel,
                            TG_Pair:$stride,
                            DefaultValuedAttr<TG_Pair, "{0, 0}">:$padding),
                       extraArgs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` `=` $kernel `stride` `=` $stride attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferPoolResult(loc, adaptor.getInput(), adaptor.getKernel(),
                             adaptor.getStride(), adaptor.getPadding(), types);
    }
  }];
}

def TG_MaxPool2dOp : TG_PoolOp<"max_pool2d", "maximum", [{
    Padded positions never win; among equal maxima the first (row-major)
    wins, and a NaN wins over any number.
  }]>;

// PyTorch's avg_pool2d counts the padding by default; models ported from it
// expect the same numbers, so the attribute defaults to true.
def TG_AvgPool2dOp : TG_PoolOp<"avg_pool2d", "average", [{
    With `count_include_pad` (the default, as in PyTorch) every window is
    divided by its full size `kernel[0] * kernel[1]`, padded zeros included;
    with `count_include_pad = false` by the number of its unpadded positions.
  }], (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad)>;

//===----------------------------------------------------------------------===//
// Backward ops: the transposed data movement that the VJPs of embedding,
// conv2d and pooling need. They are not differentiable themselves.
//===----------------------------------------------------------------------===//

def TG_EmbeddingGradOp : TG_Op<"embedding_grad", [Pure]> {
  let summary = "scatter-add of row cotangents into an embedding table";
  let description = [{
    The transpose of `tg.embedding`: `result[v, :] = sum of grad[i..., :]
    over the positions i where clamp(indices[i...]) == v`. The result type
    is the table's.

    ```mlir
    %dw = tg.embedding_grad %g, %ids : tensor<8x16x64xf32>, tensor<8x16xi64> -> tensor<1000x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_IntTensor:$indices);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_Conv2dGradInputOp : TG_Op<"conv2d_grad_input", [Pure]> {
  let summary = "cotangent of a conv2d input (transposed convolution)";
  let description = [{
    Given the cotangent `grad` of `tg.conv2d(input, weight)` with the same
    attributes, computes the cotangent of `input`, whose type is the result
    type.

    ```mlir
    %dx = tg.conv2d_grad_input %g, %w : tensor<8x6x24x24xf32>, tensor<6x1x5x5xf32> -> tensor<8x1x28x28xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$weight,
                       DefaultValuedAttr<TG_Pair, "{1, 1}">:$stride,
                       DefaultValuedAttr<TG_Pair, "{0, 0}">:$padding,
                       DefaultValuedAttr<TG_Pair, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` type($grad) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_Conv2dGradWeightOp : TG_Op<"conv2d_grad_weight", [Pure]> {
  let summary = "cotangent of a conv2d weight";
  let description = [{
    Given the forward `input` and the cotangent `grad` of `tg.conv2d(input,
    weight)` with the same attributes, computes the cotangent of `weight`,
    whose type is the result type.

    ```mlir
    %dw = tg.conv2d_grad_weight %x, %g : tensor<8x1x28x28xf32>, tensor<8x6x24x24xf32> -> tensor<6x1x5x5xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$grad,
                       DefaultValuedAttr<TG_Pair, "{1, 1}">:$stride,
                       DefaultValuedAttr<TG_Pair, "{0, 0}">:$padding,
                       DefaultValuedAttr<TG_Pair, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` type($input) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_MaxPool2dGradOp : TG_Op<"max_pool2d_grad",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "cotangent of a max_pool2d input";
  let description = [{
    Routes each window's cotangent to the first position (row-major) that
    holds the window's maximum in the forward `input`, or to its last NaN
    if it holds any (PyTorch's rule: a NaN replaces the running maximum,
    a number only when it is greater).

    ```mlir
    %dx = tg.max_pool2d_grad %g, %x kernel = [2, 2] stride = [2, 2] : tensor<8x6x14x14xf32>, tensor<8x6x28x28xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_Pair:$kernel, TG_Pair:$stride,
                       DefaultValuedAttr<TG_Pair, "{0, 0}">:$padding);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `kernel` `=` $kernel `stride` `=` $stride attr-dict `:`
    type($grad) `,` type($input)
  }];
  let hasVerifier = 1;
}

def TG_AvgPool2dGradOp : TG_Op<"avg_pool2d_grad", [Pure]> {
  let summary = "cotangent of an avg_pool2d input";
  let description = [{
    Spreads each window's cotangent evenly over the window's unpadded
    positions, dividing by the same count as the forward `tg.avg_pool2d`
    with the same `count_include_pad`; the result type is the forward
    input's.

    ```mlir
    %dx = tg.avg_pool2d_grad %g kernel = [2, 2] stride = [2, 2] : tensor<8x6x14x14xf32> -> tensor<8x6x28x28xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_Pair:$kernel, TG_Pair:$stride,
                       DefaultValuedAttr<TG_Pair, "{0, 0}">:$padding,
                       DefaultValuedAttr<BoolAttr, "true">:$count_include_pad);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `kernel` `=` $kernel `stride` `=` $stride attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion groups (tg-fuse): one region op per kernel of the step
//===----------------------------------------------------------------------===//

def TG_FusedOp : TG_Op<"fused", [IsolatedFromAbove, RecursiveMemoryEffects,
                                 SingleBlock]> {
  let summary = "a fusion group: tg ops that run as one kernel";
  let description = [{
    The ops of the body run as one kernel of kind `kind` (`#tg.kernel<...>`):
    its operands are what the kernel reads from memory, its results what it
    writes; values defined and used only inside the body never reach
    memory, so the memory planner gives them no buffer. The body is
    isolated from above (a kernel is a function of its arguments, which the
    GPU backend outlines as it stands); its block arguments are the
    operands, `tg.yield` names the results. Any backend may run the body op
    by op instead (the CPU backend and the reference evaluator do), so
    fusion never changes results.

    `tg-fuse` records its cost model on the group: `tg.flops`,
    `tg.bytes_read` and `tg.bytes_written` (the bytes of the operands and
    results).

    ```mlir
    %r = tg.fused <gemm> ins(%x, %w, %b : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>)
        {tg.flops = 8448 : i64, tg.bytes_read = 2688 : i64, tg.bytes_written = 1024 : i64} {
    ^bb0(%a: tensor<8x16xf32>, %c: tensor<16x32xf32>, %d: tensor<32xf32>):
      %m = tg.matmul %a, %c : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
      %s = tg.add %m, %d : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
      %y = tg.relu %s : tensor<8x32xf32>
      tg.yield %y : tensor<8x32xf32>
    } -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_Tensor>:$inputs, TG_KernelKindAttr:$kind);
  let results = (outs Variadic<TG_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind (`ins` `(` $inputs^ `:` type($inputs) `)`)? attr-dict-with-keyword
    $body `->` type($results)
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    // The body gets one block whose arguments match `inputs`; the caller
    // fills it and ends it with tg.yield.
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes, "::mlir::ValueRange":$inputs,
                   "::mlir::tg::KernelKind":$kind)>
  ];
  let extraClassDeclaration = [{
    /// The body's only block.
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The tg.yield that ends the body.
    YieldOp getYield();
  }];
}

def TG_YieldOp : TG_Op<"yield", [Pure, Terminator, ReturnLike,
                                 HasParent<"FusedOp">]> {
  let summary = "the results of a tg.fused group";
  let description = [{
    Ends the body of a `tg.fused`: its operands become the group's results,
    in order, with the same types.

    ```mlir
    tg.yield %y, %z : tensor<8x32xf32>, tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // TG_OPS_TD
