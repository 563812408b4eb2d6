// RUN: tg-opt %s --split-input-file --tg-assign-precision --verify-diagnostics | FileCheck %s

// keep_fp32 in tg.train: ops whose location names a selected call path
// (the frontend's NameLoc, here written by hand) or whose kind is listed
// stay f32 and are tagged keep-fp32, even when they were f32 already; the
// rest follows the bf16 policy. "blk.*.fc" selects blk.0.fc and blk.1.fc
// (and what they call), not blk.0.out.
// CHECK-LABEL: func.func @forward
// CHECK: tg.cast %arg1 {tg.precision = "compute-copy"} : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK-NOT: tg.cast %arg2 {tg.precision = "compute-copy"}
// CHECK: %[[A:.+]] = tg.matmul %arg0, %arg2 {tg.precision = "keep-fp32"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: %[[B:.+]] = tg.matmul %{{.+}}, %{{.+}} {tg.acc = f32, tg.precision = "bf16-acc-f32"} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
// CHECK: %[[B32:.+]] = tg.cast %[[B]] {tg.precision = "keep-fp32"} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: tg.tanh %[[B32]] {tg.precision = "keep-fp32"} : tensor<4x8xf32>
module attributes {tg.train = {precision = "bf16", keep_fp32 = ["blk.*.fc", "tanh"]}} {
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w0: tensor<8x8xf32> {tg.name = "blk.0.out.weight", tg.role = #tg.role<param>},
                   %w1: tensor<8x8xf32> {tg.name = "blk.1.fc.weight", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc(#fc)
  %1 = tg.matmul %0, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc(#out)
  %2 = tg.tanh %1 : tensor<4x8xf32>
  %3 = tg.mean %2 axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
}
#fc = loc("blk.1.fc"("m.tg":3:5))
#out = loc("blk.0.out"("m.tg":4:5))

// -----

// A hand-written module's entry that selects nothing is an error.
// expected-error @+1 {{keep_fp32: 'ln_*' matches no call-site name or op kind of @forward}}
module attributes {tg.train = {precision = "bf16", keep_fp32 = ["tanh", "ln_*"]}} {
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.tanh %x : tensor<4x8xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}

// -----

// expected-error @+1 {{keep_fp32 must be an array of strings, got "tanh"}}
module attributes {tg.train = {precision = "bf16", keep_fp32 = "tanh"}} {
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.tanh %x : tensor<4x8xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}

// -----

// expected-error @+1 {{keep_fp32 entries must be strings, got 3 : i64}}
module attributes {tg.train = {precision = "bf16", keep_fp32 = [3]}} {
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.tanh %x : tensor<4x8xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}
