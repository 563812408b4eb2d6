// RUN: tg-opt %s --split-input-file --tg-convert-matmul-to-blas | FileCheck %s

#lhs = affine_map<(m, k, n) -> (m, k)>
#rhs_t = affine_map<(m, k, n) -> (n, k)>
#out = affine_map<(m, k, n) -> (m, n)>
// The rhs is read transposed; the lhs is a strided view (row stride 40,
// offset 8), whose address and leading dimension come from its metadata.
// CHECK: func.func private @cblas_sgemm(i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32)
// CHECK-LABEL: func.func @transposed_rhs
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:2, %[[STRIDES:.+]]:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[LDA:.+]] = arith.index_cast %[[STRIDES]]#0 : index to i32
// CHECK-DAG: %[[ROW:.+]] = arith.constant 101 : i32
// CHECK-DAG: %[[NT:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[T:.+]] = arith.constant 112 : i32
// CHECK-DAG: %[[M:.+]] = arith.constant 64 : i32
// CHECK-DAG: %[[N:.+]] = arith.constant 48 : i32
// CHECK-DAG: %[[K:.+]] = arith.constant 32 : i32
// CHECK: call @cblas_sgemm(%[[ROW]], %[[NT]], %[[T]], %[[M]], %[[N]], %[[K]], %{{.+}}, %{{.+}}, %[[LDA]],
// CHECK-NOT: linalg.generic
func.func @transposed_rhs(%a: memref<64x32xf32, strided<[40, 1], offset: 8>>, %b: memref<48x32xf32>, %c: memref<64x48xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs_t, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<64x32xf32, strided<[40, 1], offset: 8>>, memref<48x32xf32>) outs(%c : memref<64x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Too small to be worth a call, not f32, or batched: left as loops.
#lhs = affine_map<(m, k, n) -> (m, k)>
#rhs = affine_map<(m, k, n) -> (k, n)>
#out = affine_map<(m, k, n) -> (m, n)>
// CHECK-LABEL: func.func @small
// CHECK-NOT: cblas
// CHECK: linalg.generic
// CHECK-LABEL: func.func @integer
// CHECK: linalg.generic
func.func @small(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @integer(%a: memref<64x64xi32>, %b: memref<64x64xi32>, %c: memref<64x64xi32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<64x64xi32>, memref<64x64xi32>) outs(%c : memref<64x64xi32>) {
  ^bb0(%x: i32, %y: i32, %acc: i32):
    %p = arith.muli %x, %y : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}
