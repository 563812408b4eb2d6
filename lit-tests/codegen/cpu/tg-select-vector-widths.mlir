// RUN: tg-opt %s --split-input-file --tg-select-vector-widths=lanes=8 | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-select-vector-widths=lanes=16 | FileCheck %s --check-prefix=AVX512

#id = affine_map<(i, j) -> (i, j)>
// An elementwise nest: 8 lanes (AVX2), 16 (AVX-512).
// CHECK-LABEL: func.func @tanh
// CHECK: linalg.generic {{.+}}tg_cpu.vector_width = 8 : i64
// AVX512-LABEL: func.func @tanh
// AVX512: linalg.generic {{.+}}tg_cpu.vector_width = 16 : i64
func.func @tanh(%x: memref<8x100xf32>, %y: memref<8x100xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x100xf32>) outs(%y : memref<8x100xf32>) {
  ^bb0(%a: f32, %b: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  }
  return
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// Rows of 4: one unmasked vector of 4 at either register width.
// CHECK-LABEL: func.func @short_rows
// CHECK: tg_cpu.vector_width = 4 : i64
// AVX512-LABEL: func.func @short_rows
// AVX512: tg_cpu.vector_width = 4 : i64
func.func @short_rows(%x: memref<6x4xf32>, %y: memref<6x4xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<6x4xf32>) outs(%y : memref<6x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>
// A body in f64 (the Box-Muller draws): half the lanes.
// CHECK-LABEL: func.func @f64_body
// CHECK: tg_cpu.vector_width = 4 : i64
// AVX512-LABEL: func.func @f64_body
// AVX512: tg_cpu.vector_width = 8 : i64
func.func @f64_body(%x: memref<64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %w = arith.extf %a : f32 to f64
    %l = math.log %w : f64
    %n = arith.truncf %l : f64 to f32
    linalg.yield %n : f32
  }
  return
}

// -----

#in = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
// The sum of exp(x - max) over each row (log-sum-exp): the map is
// vectorised, the sum stays in order.
// CHECK-LABEL: func.func @row_sum
// CHECK: tg_cpu.vector_width = 8 : i64
func.func @row_sum(%x: memref<4x50xf32>, %m: memref<4xf32>, %s: memref<4xf32>) {
  linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<4x50xf32>, memref<4xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%a: f32, %mx: f32, %acc: f32):
    %d = arith.subf %a, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %acc, %e : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#in = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
// A column sum (bias gradient): the reduction is the outer loop, the
// innermost loop is parallel.
// CHECK-LABEL: func.func @column_sum
// CHECK: tg_cpu.vector_width = 8 : i64
func.func @column_sum(%x: memref<16x40xf32>, %s: memref<40xf32>) {
  linalg.generic {indexing_maps = [#in, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<16x40xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
// Not vectorised here: a reassociable sum (LLVM's, with partial sums), ...
// CHECK-LABEL: func.func @reassoc_dot
// CHECK-NOT: tg_cpu.vector_width
func.func @reassoc_dot(%a: memref<4x40xf32>, %b: memref<5x40xf32>, %c: memref<4x5xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x40xf32>, memref<5x40xf32>) outs(%c : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
// ... an operand read across the innermost loop (a transpose), ...
// CHECK-LABEL: func.func @transposed
// CHECK-NOT: tg_cpu.vector_width
func.func @transposed(%x: memref<16x8xf32>, %y: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x8xf32>) outs(%y : memref<8x16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>
// ... i1 buffers (a vector of i1 is bits in memory, a memref of i1 bytes), ...
// CHECK-LABEL: func.func @i1_result
// CHECK-NOT: tg_cpu.vector_width
func.func @i1_result(%x: memref<64xf32>, %y: memref<64xi1>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<64xf32>) outs(%y : memref<64xi1>) {
  ^bb0(%a: f32, %b: i1):
    %z = arith.constant 0.0 : f32
    %c = arith.cmpf olt, %a, %z : f32
    linalg.yield %c : i1
  }
  return
}

// -----

#in = affine_map<(i, j) -> (i, j)>
#out = affine_map<(i, j) -> (i, j)>
// ... an innermost extent of 1, ...
// CHECK-LABEL: func.func @unit_rows
// CHECK-NOT: tg_cpu.vector_width
func.func @unit_rows(%x: memref<64x1xf32>, %y: memref<64x1xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x1xf32>) outs(%y : memref<64x1xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

#x = affine_map<(c, i, j, y, x) -> (c, y + i, x + j)>
#col = affine_map<(c, i, j, y, x) -> (c, i, j, y, x)>
// A stride-1 im2col copy: the window's read x + j advances one element
// per step of x, so its rows are vectors too (rows of 10: 16 lanes).
// CHECK-LABEL: func.func @window
// CHECK: tg_cpu.vector_width = 8 : i64
// AVX512-LABEL: func.func @window
// AVX512: tg_cpu.vector_width = 16 : i64
func.func @window(%in: memref<6x14x14xf32>, %out: memref<6x5x5x10x10xf32>) {
  linalg.generic {indexing_maps = [#x, #col], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%in : memref<6x14x14xf32>) outs(%out : memref<6x5x5x10x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

#x = affine_map<(y, x) -> (y, x * 2)>
#o = affine_map<(y, x) -> (y, x)>
// ... but not a stride-2 one (every other element), ...
// CHECK-LABEL: func.func @strided_window
// CHECK-NOT: tg_cpu.vector_width
// AVX512-LABEL: func.func @strided_window
// AVX512-NOT: tg_cpu.vector_width
func.func @strided_window(%in: memref<4x32xf32>, %out: memref<4x16xf32>) {
  linalg.generic {indexing_maps = [#x, #o], iterator_types = ["parallel", "parallel"]}
      ins(%in : memref<4x32xf32>) outs(%out : memref<4x16xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>
// ... and a gather (embedding): a load in the body has no vector form.
// CHECK-LABEL: func.func @gather
// CHECK-NOT: tg_cpu.vector_width
func.func @gather(%ids: memref<16xi64>, %table: memref<100xf32>, %y: memref<16xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%ids : memref<16xi64>) outs(%y : memref<16xf32>) {
  ^bb0(%i: i64, %b: f32):
    %j = arith.index_cast %i : i64 to index
    %v = memref.load %table[%j] : memref<100xf32>
    linalg.yield %v : f32
  }
  return
}

// -----

// A bad option is a diagnostic.
// RUN: not tg-opt %s --split-input-file --tg-select-vector-widths=lanes=6 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: lanes must be a power of two from 2 to 64, got 6
func.func @empty() {
  return
}
