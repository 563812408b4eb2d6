// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-vectorize-elementwise --cse | FileCheck %s

#id = affine_map<(i) -> (i)>
// 100 elements at 8 lanes: 12 full vectors, then 4 lanes masked.
// CHECK-LABEL: func.func @tanh
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %c96 step %c8
// CHECK: %[[V:.+]] = vector.load %arg0[%[[I]]] : memref<100xf32>, vector<8xf32>
// CHECK: %[[T:.+]] = math.tanh %[[V]] : vector<8xf32>
// CHECK: vector.store %[[T]], %arg1[%[[I]]] : memref<100xf32>, vector<8xf32>
// CHECK: %[[M:.+]] = vector.constant_mask [4] : vector<8xi1>
// CHECK: %[[W:.+]] = vector.maskedload %arg0[%c96], %[[M]], %{{.+}} : memref<100xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK: %[[U:.+]] = math.tanh %[[W]] : vector<8xf32>
// CHECK: vector.maskedstore %arg1[%c96], %[[M]], %[[U]] : memref<100xf32>, vector<8xi1>, vector<8xf32>
func.func @tanh(%x: memref<100xf32>, %y: memref<100xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], tg_cpu.vector_width = 8 : i64}
      ins(%x : memref<100xf32>) outs(%y : memref<100xf32>) {
  ^bb0(%a: f32, %b: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  }
  return
}

// -----

#in = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
// Operands that the innermost loop does not index are read once and
// broadcast (the row's max); a bias indexed by it is a vector; constants
// are splats. Rows of 16 at 16 lanes: no mask.
// CHECK-LABEL: func.func @broadcasts
// CHECK: scf.for %[[I:.+]] = %c0 to %c3 step %c1
// CHECK: scf.for %[[J:.+]] = %c0 to %c16 step %c16
// CHECK-DAG: %[[X:.+]] = vector.load %arg0[%[[I]], %[[J]]] : memref<3x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
// CHECK-DAG: %[[M:.+]] = memref.load %arg1[%[[I]]] : memref<3xf32>
// CHECK-DAG: %[[MS:.+]] = vector.broadcast %[[M]] : f32 to vector<16xf32>
// CHECK-DAG: %[[B:.+]] = vector.load %arg2[%[[J]]] : memref<16xf32>, vector<16xf32>
// CHECK-DAG: %[[TWO:.+]] = arith.constant dense<2.000000e+00> : vector<16xf32>
// CHECK: %[[D:.+]] = arith.subf %[[X]], %[[MS]] : vector<16xf32>
// CHECK: %[[S:.+]] = arith.mulf %[[D]], %[[TWO]] : vector<16xf32>
// CHECK: %[[R:.+]] = arith.addf %[[S]], %[[B]] : vector<16xf32>
// CHECK: vector.store %[[R]], %arg3[%[[I]], %[[J]]]
// CHECK-NOT: vector.constant_mask
func.func @broadcasts(%x: memref<3x16xf32, strided<[16, 1], offset: ?>>, %m: memref<3xf32>,
                      %b: memref<16xf32>, %y: memref<3x16xf32>) {
  linalg.generic {indexing_maps = [#in, #row, #col, #in], iterator_types = ["parallel", "parallel"], tg_cpu.vector_width = 16 : i64}
      ins(%x, %m, %b : memref<3x16xf32, strided<[16, 1], offset: ?>>, memref<3xf32>, memref<16xf32>) outs(%y : memref<3x16xf32>) {
  ^bb0(%a: f32, %mx: f32, %bias: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %d = arith.subf %a, %mx : f32
    %s = arith.mulf %d, %two : f32
    %r = arith.addf %s, %bias : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#in = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
// A row sum of exp: exp on 8 lanes, then the lanes added to the row's
// accumulator one by one, in order (lane 0 first); 10 = 8 + 2 masked.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.for %[[I:.+]] = %c0 to %c4 step %c1
// CHECK: %[[INIT:.+]] = memref.load %arg1[%[[I]]] : memref<4xf32>
// CHECK: %[[SUM:.+]] = scf.for %[[J:.+]] = %c0 to %c8 step %c8 iter_args(%[[ACC:.+]] = %[[INIT]]) -> (f32)
// CHECK: %[[E:.+]] = math.exp %{{.+}} : vector<8xf32>
// CHECK: %[[E0:.+]] = vector.extract %[[E]][0] : f32 from vector<8xf32>
// CHECK: %[[A0:.+]] = arith.addf %[[ACC]], %[[E0]] : f32
// CHECK: %[[E1:.+]] = vector.extract %[[E]][1] : f32 from vector<8xf32>
// CHECK: %[[A1:.+]] = arith.addf %[[A0]], %[[E1]] : f32
// CHECK: %[[E7:.+]] = vector.extract %[[E]][7] : f32 from vector<8xf32>
// CHECK: %[[A7:.+]] = arith.addf %{{.+}}, %[[E7]] : f32
// CHECK: scf.yield %[[A7]] : f32
// CHECK: vector.constant_mask [2] : vector<8xi1>
// CHECK: %[[T:.+]] = math.exp %{{.+}} : vector<8xf32>
// CHECK: vector.extract %[[T]][0]
// CHECK: %[[T1:.+]] = vector.extract %[[T]][1]
// CHECK: %[[LAST:.+]] = arith.addf %{{.+}}, %[[T1]] : f32
// CHECK-NOT: vector.extract
// CHECK: memref.store %[[LAST]], %arg1[%[[I]]] : memref<4xf32>
func.func @row_sum(%x: memref<4x10xf32>, %s: memref<4xf32>) {
  linalg.generic {indexing_maps = [#in, #row], iterator_types = ["parallel", "reduction"], tg_cpu.vector_width = 8 : i64}
      ins(%x : memref<4x10xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %r = arith.addf %acc, %e : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// The causal mask: linalg.index of the innermost loop is the first lane's
// index plus [0, 1, ..., 7]; of an outer loop, a broadcast.
// CHECK-LABEL: func.func @causal
// CHECK: scf.for %[[I:.+]] = %c0 to %c8 step %c1
// CHECK: scf.for %[[J:.+]] = %c0 to %c8 step %c8
// CHECK-DAG: %[[II:.+]] = vector.broadcast %[[I]] : index to vector<8xindex>
// CHECK-DAG: %[[JJ:.+]] = vector.broadcast %[[J]] : index to vector<8xindex>
// CHECK-DAG: %[[STEP:.+]] = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : vector<8xindex>
// CHECK: %[[COL:.+]] = arith.addi %[[JJ]], %[[STEP]] : vector<8xindex>
// CHECK: %[[ABOVE:.+]] = arith.cmpi ugt, %[[COL]], %[[II]] : vector<8xindex>
// CHECK: arith.select %[[ABOVE]], %{{.+}}, %{{.+}} : vector<8xi1>, vector<8xf32>
func.func @causal(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"], tg_cpu.vector_width = 8 : i64}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %above = arith.cmpi ugt, %j, %i : index
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %above, %ninf, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>
// bf16 in, f32 inside, bf16 out: vectors of bf16 at the buffers.
// CHECK-LABEL: func.func @bf16
// CHECK: vector.load %arg0[%{{.+}}] : memref<32xbf16>, vector<8xbf16>
// CHECK: arith.extf %{{.+}} : vector<8xbf16> to vector<8xf32>
// CHECK: arith.truncf %{{.+}} : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %{{.+}}, %arg1[%{{.+}}] : memref<32xbf16>, vector<8xbf16>
func.func @bf16(%x: memref<32xbf16>, %y: memref<32xbf16>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], tg_cpu.vector_width = 8 : i64}
      ins(%x : memref<32xbf16>) outs(%y : memref<32xbf16>) {
  ^bb0(%a: bf16, %b: bf16):
    %w = arith.extf %a : bf16 to f32
    %e = math.exp %w : f32
    %n = arith.truncf %e : f32 to bf16
    linalg.yield %n : bf16
  }
  return
}

// -----

#z = affine_map<(c, y, i, j, x) -> (c, i, j, y + 4 - i, x + 4 - j)>
#dx = affine_map<(c, y, i, j, x) -> (c, y, x)>
// The convolution's col2im (LeNet's conv2): each row of dx summed over the
// taps (i, j), read at y + 4 - i and x + 4 - j. The tap offsets are
// computed once per row of lanes; the lanes are consecutive elements of
// both buffers. Rows of 14 at 16 lanes: masked.
// CHECK-LABEL: func.func @col2im
// CHECK: scf.for %[[C:.+]] = %c0 to %c6 step %c1
// CHECK: scf.for %[[Y:.+]] = %c0 to %c14 step %c1
// CHECK: scf.for %[[I:.+]] = %c0 to %c5 step %c1
// CHECK: scf.for %[[J:.+]] = %c0 to %c5 step %c1
// CHECK: %[[M:.+]] = vector.constant_mask [14] : vector<16xi1>
// CHECK: %[[NI:.+]] = arith.muli %[[I]], %c-1 : index
// CHECK: %[[YI:.+]] = arith.addi %[[Y]], %[[NI]] : index
// CHECK: %[[ZY:.+]] = arith.addi %[[YI]], %c4 : index
// CHECK: %[[NJ:.+]] = arith.muli %[[J]], %c-1 : index
// CHECK: %[[XJ:.+]] = arith.addi %c0, %[[NJ]] : index
// CHECK: %[[ZX:.+]] = arith.addi %[[XJ]], %c4 : index
// CHECK: %[[V:.+]] = vector.maskedload %arg0[%[[C]], %[[I]], %[[J]], %[[ZY]], %[[ZX]]], %[[M]]
// CHECK: %[[D:.+]] = vector.maskedload %arg1[%[[C]], %[[Y]], %c0], %[[M]]
// CHECK: %[[S:.+]] = arith.addf %[[D]], %[[V]] : vector<16xf32>
// CHECK: vector.maskedstore %arg1[%[[C]], %[[Y]], %c0], %[[M]], %[[S]]
func.func @col2im(%z: memref<6x5x5x18x18xf32>, %dx: memref<6x14x14xf32, strided<[196, 14, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#z, #dx], iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel"], tg_cpu.vector_width = 16 : i64}
      ins(%z : memref<6x5x5x18x18xf32>) outs(%dx : memref<6x14x14xf32, strided<[196, 14, 1], offset: ?>>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#in = affine_map<(y, x) -> (y, x * 2)>
#out = affine_map<(y, x) -> (y, x)>
// A strided read (a stride-2 window) is not consecutive lanes.
func.func @bad_stride(%x: memref<4x32xf32>, %y: memref<4x16xf32>) {
  // expected-error @+1 {{cannot be vectorised as 'tg_cpu.vector_width' asks: an operand is not contiguous along the innermost loop}}
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel"], tg_cpu.vector_width = 16 : i64}
      ins(%x : memref<4x32xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

#first = affine_map<(i, j) -> (0, j)>
#id = affine_map<(i, j) -> (i, j)>
// A result that is also read at positions other than the one being written
// (here its first row, copied into each row): lanes load before they store,
// which the scalar loop's order may not allow, so it is refused.
func.func @bad_self_read(%y: memref<4x64xf32>) {
  // expected-error @+1 {{cannot be vectorised as 'tg_cpu.vector_width' asks: an input is a result read at other positions}}
  linalg.generic {indexing_maps = [#first, #id], iterator_types = ["parallel", "parallel"], tg_cpu.vector_width = 16 : i64}
      ins(%y : memref<4x64xf32>) outs(%y : memref<4x64xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>
// An attribute the pass cannot honour is an error, not a miscompile.
func.func @bad_i1(%x: memref<64xf32>, %y: memref<64xi1>) {
  // expected-error @+1 {{cannot be vectorised as 'tg_cpu.vector_width' asks: an operand's elements are not whole bytes}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], tg_cpu.vector_width = 8 : i64}
      ins(%x : memref<64xf32>) outs(%y : memref<64xi1>) {
  ^bb0(%a: f32, %b: i1):
    %z = arith.constant 0.0 : f32
    %c = arith.cmpf olt, %a, %z : f32
    linalg.yield %c : i1
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>
func.func @bad_width(%x: memref<64xf32>, %y: memref<64xf32>) {
  // expected-error @+1 {{'tg_cpu.vector_width' must be an integer from 2 to 64 lanes}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], tg_cpu.vector_width = 1 : i64}
      ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}
