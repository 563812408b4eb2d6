// tg-data-parallel's comm-dtype (docs/data-parallel.md, "Gradients in bf16
// or f16 on the wire"): the f32 gradients are cast to bf16 (or f16) right before
// their bucket's collective, which communicates that type (half the
// bytes), and back to f32 right after it, before the optimizer. The loss,
// the clipping norm's global sum and ZeRO's all_gather of the parameters
// stay f32; so does everything with the default, comm-dtype = f32.
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2 comm-dtype=bf16" | FileCheck %s --check-prefix=BF16
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2 comm-dtype=f16 bucket-bytes=4" | FileCheck %s --check-prefix=F16
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2 comm-dtype=bf16 zero=1" | FileCheck %s --check-prefix=ZERO
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2" | FileCheck %s --check-prefix=F32
// RUN: not tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2 comm-dtype=f8" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tg-data-parallel: comm-dtype must be f32, bf16 or f16, got 'f8'

// One bucket of b and w (backward order), in bf16 on the wire.
// BF16-LABEL: func.func @train_step
// BF16: %[[R:.+]]:3 = call @forward_grad
// BF16-NEXT: %[[L:.+]] = tg.all_reduce %[[R]]#0 on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<f32>
// BF16-NEXT: %[[HB:.+]] = tg.cast %[[R]]#2 : tensor<2xf32> to tensor<2xbf16>
// BF16-NEXT: %[[HW:.+]] = tg.cast %[[R]]#1 : tensor<3xf32> to tensor<3xbf16>
// BF16-NEXT: %[[G:.+]]:2 = tg.all_reduce %[[HB]], %[[HW]] on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<2xbf16>, tensor<3xbf16>
// BF16-NEXT: %[[B:.+]] = tg.cast %[[G]]#0 : tensor<2xbf16> to tensor<2xf32>
// BF16-NEXT: %[[W:.+]] = tg.cast %[[G]]#1 : tensor<3xbf16> to tensor<3xf32>
// BF16-NOT: tg.all_reduce
// The optimizer reads the f32 averages, nothing reads the f32 gradients
// before the exchange but the casts.
// BF16-NOT: {{[ (]}}%[[R]]#1
// BF16-NOT: {{[ (]}}%[[R]]#2
// BF16: tg.mul %{{.+}}, %[[W]] : tensor<f32>, tensor<3xf32>
// BF16: tg.mul %{{.+}}, %[[B]] : tensor<f32>, tensor<2xf32>
// BF16: return %[[L]]
// Buckets of 4 bytes: b (8 bytes in f32) fills one (buckets are formed by
// the gradients' own bytes, as PyTorch DDP's before its compression hook).
// F16-LABEL: func.func @train_step
// F16: tg.all_reduce %{{.+}} : !tg.comm<ranks = 2>, tensor<f32>
// F16-NEXT: %[[HB:.+]] = tg.cast %{{.+}} : tensor<2xf32> to tensor<2xf16>
// F16-NEXT: %[[GB:.+]] = tg.all_reduce %[[HB]] on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<2xf16>
// F16-NEXT: tg.cast %[[GB]] : tensor<2xf16> to tensor<2xf32>
// F16-NEXT: %[[HW:.+]] = tg.cast %{{.+}} : tensor<3xf32> to tensor<3xf16>
// F16-NEXT: %[[GW:.+]] = tg.all_reduce %[[HW]] on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<3xf16>
// F16-NEXT: tg.cast %[[GW]] : tensor<3xf16> to tensor<3xf32>
// ZERO-LABEL: func.func @train_step
// ZERO: tg.reduce_scatter {{.+}} : !tg.comm<ranks = 2>, tensor<2xbf16>, tensor<3xbf16> -> tensor<1xbf16>, tensor<2xbf16>
// F32-LABEL: func.func @train_step
// F32-NOT: {{b?f16}}
// F32: tg.all_reduce %{{.+}}, %{{.+}} on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<2xf32>, tensor<3xf32>
// F32-NOT: {{b?f16}}
// F32: return
module attributes {tg.train = {optimizer = {kind = "sgd", lr = 0.1 : f64, weight_decay = 0.0 : f64}, schedule = {kind = "constant"}}} {
func.func @forward(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %b: tensor<2xf32> {tg.name = "b", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %2 = tg.sum %b axes = [0] : tensor<2xf32> -> tensor<f32>
  %3 = tg.add %1, %2 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %3 : tensor<f32>
}
}

// -----

// ZeRO stage 1 with AdamW and clipping: the gradients are reduce-scattered
// in bf16 and their shards cast back to f32; the clipping norm's global
// sum and the all_gather of the updated parameters stay f32.
// ZERO-LABEL: func.func @train_step
// ZERO: tg.all_reduce %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<f32>
// ZERO-NEXT: %[[HB:.+]] = tg.cast %{{.+}} : tensor<2xf32> to tensor<2xbf16>
// ZERO-NEXT: %[[HW:.+]] = tg.cast %{{.+}} : tensor<3xf32> to tensor<3xbf16>
// ZERO-NEXT: %[[S:.+]]:2 = tg.reduce_scatter %[[HB]], %[[HW]] on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<2xbf16>, tensor<3xbf16> -> tensor<1xbf16>, tensor<2xbf16>
// ZERO-NEXT: tg.cast %[[S]]#0 : tensor<1xbf16> to tensor<1xf32>
// ZERO-NEXT: %[[GW:.+]] = tg.cast %[[S]]#1 : tensor<2xbf16> to tensor<2xf32>
// ZERO: tg.mul %[[GW]], %[[GW]] : tensor<2xf32>, tensor<2xf32>
// ZERO: tg.all_reduce %{{.+}} on %{{.+}} {op = "sum"} : !tg.comm<ranks = 2>, tensor<f32>
// ZERO: tg.all_gather %{{.+}}, %{{.+}} on %{{.+}} : !tg.comm<ranks = 2>, tensor<2xf32>, tensor<1xf32> -> tensor<3xf32>, tensor<2xf32>
// F32-LABEL: func.func @train_step
// F32-NOT: {{b?f16}}
// F32: return
module attributes {tg.train = {optimizer = {kind = "adamw", lr = 0.1 : f64, weight_decay = 0.01 : f64}, clip_grad_norm = 1.0 : f64, schedule = {kind = "constant"}}} {
func.func @forward(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %b: tensor<2xf32> {tg.name = "b", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %2 = tg.sum %b axes = [0] : tensor<2xf32> -> tensor<f32>
  %3 = tg.add %1, %2 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %3 : tensor<f32>
}
}

// -----

// With accumulation: the sums of the micro-batch loop are narrowed after
// it, once per step, and the division by the micro-batch count reads the
// f32 averages. (Not a LABEL: the split before has a @train_step too; the
// one scf.for of the output is this one's.)
// BF16: %[[ACC:.+]]:3 = scf.for
// BF16: scf.yield
// BF16-NEXT: }
// BF16-NEXT: tg.all_reduce %[[ACC]]#0 on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<f32>
// BF16-NEXT: %[[HB:.+]] = tg.cast %[[ACC]]#2 : tensor<2xf32> to tensor<2xbf16>
// BF16-NEXT: %[[HW:.+]] = tg.cast %[[ACC]]#1 : tensor<3xf32> to tensor<3xbf16>
// BF16-NEXT: %[[G:.+]]:2 = tg.all_reduce %[[HB]], %[[HW]] on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<2xbf16>, tensor<3xbf16>
// BF16-NEXT: tg.cast %[[G]]#0 : tensor<2xbf16> to tensor<2xf32>
// BF16-NEXT: %[[W:.+]] = tg.cast %[[G]]#1 : tensor<3xbf16> to tensor<3xf32>
// BF16: tg.div %[[W]], %{{.+}} : tensor<3xf32>, tensor<f32>
module attributes {tg.train = {accumulate = 2 : i64, optimizer = {kind = "sgd", lr = 0.1 : f64, weight_decay = 0.0 : f64}, schedule = {kind = "constant"}}} {
func.func @forward(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %b: tensor<2xf32> {tg.name = "b", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %2 = tg.sum %b axes = [0] : tensor<2xf32> -> tensor<f32>
  %3 = tg.add %1, %2 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %3 : tensor<f32>
}
}
