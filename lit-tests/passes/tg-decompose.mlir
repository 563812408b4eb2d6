// RUN: tg-opt %s --split-input-file --tg-decompose | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-decompose=ops=gelu | FileCheck %s --check-prefix=ONLY
// RUN: not tg-opt %s --tg-decompose=ops=matmul 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: tg-decompose: 'matmul' is not a composite op

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: tensor<4x10xf32>)
// CHECK: %[[M:.+]] = tg.max %[[X]] axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
// CHECK: %[[D:.+]] = tg.sub %[[X]], %[[M]]
// CHECK: %[[E:.+]] = tg.exp %[[D]]
// CHECK: %[[S:.+]] = tg.sum %[[E]] axes = [1] keepdims
// CHECK: %[[R:.+]] = tg.div %[[E]], %[[S]]
// CHECK: return %[[R]]
// ONLY-LABEL: func.func @softmax
// ONLY: tg.softmax
func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = tg.softmax %x axis = -1 : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:.+]]: tensor<4x10xf32>)
// CHECK: %[[M:.+]] = tg.max %[[X]] axes = [0] keepdims : tensor<4x10xf32> -> tensor<1x10xf32>
// CHECK: %[[D:.+]] = tg.sub %[[X]], %[[M]]
// CHECK: %[[E:.+]] = tg.exp %[[D]]
// CHECK: %[[S:.+]] = tg.sum %[[E]] axes = [0] keepdims
// CHECK: %[[L:.+]] = tg.log %[[S]]
// CHECK: %[[R:.+]] = tg.sub %[[D]], %[[L]]
// CHECK: return %[[R]]
func.func @log_softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = tg.log_softmax %x axis = 0 : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// A bf16 composite is one op, computed in f32 and rounded once at its
// result (as the reference evaluator evaluates it): its parts run on an f32
// copy of the operand, with f32 constants, and the result is cast back.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.+]]: tensor<8xbf16>)
// CHECK-DAG: %[[HALF:.+]] = tg.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[ONE:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[RS2:.+]] = tg.constant dense<0.707106769> : tensor<f32>
// CHECK: %[[XF:.+]] = tg.cast %[[X]] : tensor<8xbf16> to tensor<8xf32>
// CHECK: %[[A:.+]] = tg.mul %[[XF]], %[[RS2]]
// CHECK: %[[ERF:.+]] = tg.erf %[[A]]
// CHECK: %[[HX:.+]] = tg.mul %[[HALF]], %[[XF]]
// CHECK: %[[P:.+]] = tg.add %[[ONE]], %[[ERF]]
// CHECK: %[[EXACTF:.+]] = tg.mul %[[HX]], %[[P]]
// CHECK: %[[EXACT:.+]] = tg.cast %[[EXACTF]] : tensor<8xf32> to tensor<8xbf16>
// CHECK: tg.tanh
// CHECK: return %[[EXACT]],
// ONLY-LABEL: func.func @gelu
// ONLY-NOT: tg.gelu
// ONLY: tg.erf
// ONLY: tg.tanh
func.func @gelu(%x: tensor<8xbf16>) -> (tensor<8xbf16>, tensor<8xbf16>) {
  %0 = tg.gelu %x : tensor<8xbf16>
  %1 = tg.gelu %x approximate = tanh : tensor<8xbf16>
  return %0, %1 : tensor<8xbf16>, tensor<8xbf16>
}

// -----

// silu goes through sigmoid, which is decomposed in turn.
// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.+]]: tensor<8xf32>)
// CHECK: %[[ONE:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[N:.+]] = tg.neg %[[X]]
// CHECK: %[[E:.+]] = tg.exp %[[N]]
// CHECK: %[[D:.+]] = tg.add %[[ONE]], %[[E]]
// CHECK: %[[S:.+]] = tg.div %[[ONE]], %[[D]]
// CHECK: %[[R:.+]] = tg.mul %[[X]], %[[S]]
// CHECK: return %[[R]]
func.func @silu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tg.silu %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<4x16xf32>, %[[G:.+]]: tensor<16xf32>, %[[B:.+]]: tensor<16xf32>)
// CHECK: %[[EPS:.+]] = tg.constant dense<9.99999974E-6> : tensor<f32>
// CHECK: %[[MU:.+]] = tg.mean %[[X]] axes = [1] keepdims
// CHECK: %[[C:.+]] = tg.sub %[[X]], %[[MU]]
// CHECK: %[[SQ:.+]] = tg.mul %[[C]], %[[C]]
// CHECK: %[[VAR:.+]] = tg.mean %[[SQ]] axes = [1] keepdims
// CHECK: %[[VE:.+]] = tg.add %[[VAR]], %[[EPS]]
// CHECK: %[[RS:.+]] = tg.rsqrt %[[VE]]
// CHECK: %[[N:.+]] = tg.mul %[[C]], %[[RS]]
// CHECK: %[[S:.+]] = tg.mul %[[N]], %[[G]]
// CHECK: %[[R:.+]] = tg.add %[[S]], %[[B]]
// CHECK: return %[[R]]
func.func @layer_norm(%x: tensor<4x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = tg.layer_norm %x scale(%g : tensor<16xf32>) bias(%b : tensor<16xf32>) : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.+]]: tensor<4x16xf32>)
// CHECK: %[[SQ:.+]] = tg.mul %[[X]], %[[X]]
// CHECK: %[[MS:.+]] = tg.mean %[[SQ]] axes = [1] keepdims
// CHECK: tg.rsqrt
// CHECK: %[[R:.+]] = tg.mul %[[X]],
// CHECK: return %[[R]]
func.func @rms_norm(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = tg.rms_norm %x : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// The mean runs over positions whose label is not ignore_index. The label's
// log-probability is selected, not multiplied by the one-hot row, so that a
// masked (-inf) logit elsewhere in the row does not make 0 * -inf = NaN.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[X:.+]]: tensor<4x10xf32>, %[[Y:.+]]: tensor<4xi64>)
// CHECK-DAG: %[[ONE:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:.+]] = tg.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[IGN:.+]] = tg.constant dense<-7> : tensor<i64>
// CHECK: tg.log
// CHECK: %[[LP:.+]] = tg.sub
// CHECK: %[[OH:.+]] = tg.one_hot %[[Y]] : tensor<4xi64> -> tensor<4x10xf32>
// CHECK: %[[ISL:.+]] = tg.cmp ne %[[OH]], %[[ZERO]]
// CHECK: %[[PR:.+]] = tg.select %[[ISL]], %[[LP]], %[[ZERO]]
// CHECK: %[[PICK:.+]] = tg.sum %[[PR]] axes = [1] : tensor<4x10xf32> -> tensor<4xf32>
// CHECK: %[[VALID:.+]] = tg.cmp ne %[[Y]], %[[IGN]]
// CHECK: %[[NEG:.+]] = tg.neg %[[PICK]]
// CHECK: %[[NLL:.+]] = tg.select %[[VALID]], %[[NEG]], %[[ZERO]]
// CHECK: %[[CNT:.+]] = tg.select %[[VALID]], %[[ONE]], %[[ZERO]]
// CHECK: %[[TOT:.+]] = tg.sum %[[NLL]] axes = [0] : tensor<4xf32> -> tensor<f32>
// CHECK: %[[N:.+]] = tg.sum %[[CNT]] axes = [0]
// CHECK: %[[DEN:.+]] = tg.maximum %[[N]], %[[ONE]]
// CHECK: %[[R:.+]] = tg.div %[[TOT]], %[[DEN]]
// CHECK: return %[[R]]
func.func @cross_entropy(%x: tensor<4x10xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  %0 = tg.cross_entropy %x, %y {ignore_index = -7 : i64} : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @mse_loss
// CHECK-SAME: (%[[X:.+]]: tensor<4x3xf32>, %[[T:.+]]: tensor<4x3xf32>)
// CHECK: %[[D:.+]] = tg.sub %[[X]], %[[T]]
// CHECK: %[[SQ:.+]] = tg.mul %[[D]], %[[D]]
// CHECK: %[[R:.+]] = tg.mean %[[SQ]] axes = [0, 1] : tensor<4x3xf32> -> tensor<f32>
// CHECK: return %[[R]]
func.func @mse_loss(%x: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> tensor<f32> {
  %0 = tg.mse_loss %x, %t : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
