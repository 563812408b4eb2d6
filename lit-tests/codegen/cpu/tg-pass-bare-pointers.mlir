// RUN: tg-opt %s --split-input-file --tg-pass-bare-pointers | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-pass-bare-pointers=entry-points=true --verify-diagnostics | FileCheck %s --check-prefix=ENTRY
// RUN: tg-opt %s --split-input-file --tg-cpu-pipeline | FileCheck %s --check-prefix=LLVM

// A kernel's buffers of static layout become pointers: identity (passed
// as the aligned pointer), a dynamic offset (the aligned pointer advanced
// by the descriptor's offset), a constant offset (advanced by it; the
// kernel moves it back), rank 0. The dynamic shape keeps its descriptor.
// The public caller keeps its own signature.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: memref<4x8xf32>, %[[D:[a-z0-9_]+]]: memref<?xf32>, %[[I:[a-z0-9_]+]]: index)
// CHECK: %[[S:.+]] = memref.subview %[[A]][%[[I]], 0] [1, 8] [1, 1]
// CHECK: %[[T:.+]] = memref.subview %[[A]][2, 0] [1, 8] [1, 1]
// CHECK: %[[R:.+]] = memref.alloca() : memref<i64>
// CHECK: %[[AD:.+]] = builtin.unrealized_conversion_cast %[[A]] : memref<4x8xf32> to !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[AP:.+]] = llvm.extractvalue %[[AD]][1]
// CHECK: %[[SD:.+]] = builtin.unrealized_conversion_cast %[[S]] : memref<8xf32, strided<[1], offset: ?>> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK: %[[SA:.+]] = llvm.extractvalue %[[SD]][1]
// CHECK: %[[SO:.+]] = llvm.extractvalue %[[SD]][2]
// CHECK: %[[SP:.+]] = llvm.getelementptr %[[SA]][%[[SO]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %[[TD:.+]] = builtin.unrealized_conversion_cast %[[T]]
// CHECK: %[[TA:.+]] = llvm.extractvalue %[[TD]][1]
// CHECK: %[[C16:.+]] = llvm.mlir.constant(16 : i64) : i64
// CHECK: %[[TP:.+]] = llvm.getelementptr %[[TA]][%[[C16]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %[[RD:.+]] = builtin.unrealized_conversion_cast %[[R]] : memref<i64> to !llvm.struct<(ptr, ptr, i64)>
// CHECK: %[[RP:.+]] = llvm.extractvalue %[[RD]][1]
// CHECK: call @kernel(%[[AP]], %[[SP]], %[[TP]], %[[RP]], %[[D]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, memref<?xf32>) -> ()
// CHECK: func.func private @kernel(%[[KA:.+]]: !llvm.ptr, %[[KS:.+]]: !llvm.ptr, %[[KT:.+]]: !llvm.ptr, %[[KR:.+]]: !llvm.ptr, %[[KD:.+]]: memref<?xf32>)
// CHECK: llvm.insertvalue %[[KA]], %{{.+}}[0]
// CHECK: llvm.insertvalue %[[KA]], %{{.+}}[1]
// CHECK: llvm.mlir.constant(8 : i64)
// CHECK: llvm.insertvalue %{{.+}}[3, 1]
// CHECK: llvm.mlir.constant(1 : i64)
// CHECK: llvm.insertvalue %{{.+}}[4, 1]
// CHECK: %[[KAM:.+]] = builtin.unrealized_conversion_cast %{{.+}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<4x8xf32>
// CHECK: %[[KSM:.+]] = builtin.unrealized_conversion_cast %{{.+}} to memref<8xf32, strided<[1], offset: ?>>
// CHECK: %[[M16:.+]] = llvm.mlir.constant(-16 : i64) : i64
// CHECK: %[[KTB:.+]] = llvm.getelementptr %[[KT]][%[[M16]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.insertvalue %[[KTB]], %{{.+}}[1]
// CHECK: llvm.mlir.constant(16 : i64)
// CHECK: %[[KTM:.+]] = builtin.unrealized_conversion_cast %{{.+}} to memref<8xf32, strided<[1], offset: 16>>
// CHECK: %[[KRM:.+]] = builtin.unrealized_conversion_cast %{{.+}} : !llvm.struct<(ptr, ptr, i64)> to memref<i64>
// CHECK: memref.load %[[KAM]]
// CHECK: memref.store %{{.+}}, %[[KSM]]
// CHECK: memref.store %{{.+}}, %[[KTM]]
// CHECK: memref.load %[[KRM]]
// CHECK: memref.load %[[KD]]

// Through the pipeline: the kernel's LLVM function takes 4 pointers and
// one descriptor of the dynamic shape (5 values), not 5 descriptors.
// LLVM: llvm.func @kernel(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64)
// LLVM-NOT: unrealized_conversion_cast

func.func @step(%a: memref<4x8xf32>, %d: memref<?xf32>, %i: index) {
  %s = memref.subview %a[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
  %t = memref.subview %a[2, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: 16>>
  %r = memref.alloca() : memref<i64>
  call @kernel(%a, %s, %t, %r, %d) : (memref<4x8xf32>, memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: 16>>, memref<i64>, memref<?xf32>) -> ()
  return
}
func.func private @kernel(%a: memref<4x8xf32>, %s: memref<8xf32, strided<[1], offset: ?>>, %t: memref<8xf32, strided<[1], offset: 16>>, %r: memref<i64>, %d: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %a[%c1, %c0] : memref<4x8xf32>
  memref.store %x, %s[%c0] : memref<8xf32, strided<[1], offset: ?>>
  memref.store %x, %t[%c1] : memref<8xf32, strided<[1], offset: 16>>
  %n = memref.load %r[] : memref<i64>
  %y = memref.load %d[%c0] : memref<?xf32>
  return
}

// -----

// A function whose address is taken keeps its descriptors; so does a
// public one (no entry-points option) and a declaration.
// CHECK-LABEL: func.func @caller(
// CHECK: call @taken(%{{.+}}) : (memref<4xf32>) -> ()
// CHECK: call @external(%{{.+}}) : (memref<4xf32>) -> ()
// CHECK: call @public(%{{.+}}) : (memref<4xf32>) -> ()
// CHECK: func.func private @taken(%{{.+}}: memref<4xf32>)
// CHECK: func.func private @external(memref<4xf32>)
// CHECK: func.func @public(%{{.+}}: memref<4xf32>)
// ENTRY-LABEL: func.func @caller(
// ENTRY: call @public(%{{.+}}) : (memref<4xf32>) -> ()
func.func @caller(%a: memref<4xf32>) {
  %f = func.constant @taken : (memref<4xf32>) -> ()
  call @taken(%a) : (memref<4xf32>) -> ()
  call @external(%a) : (memref<4xf32>) -> ()
  call @public(%a) : (memref<4xf32>) -> ()
  return
}
func.func private @taken(%a: memref<4xf32>) {
  return
}
func.func private @external(memref<4xf32>)
func.func @public(%a: memref<4xf32>) {
  return
}

// -----

// With entry points, a function marked for a C interface takes pointers
// too and loses the mark (its caller outside the module passes pointers);
// without, it keeps both.
// CHECK-LABEL: func.func @entry(
// CHECK-SAME: memref<4xf32>, %{{.+}}: memref<i64>) attributes {llvm.emit_c_interface}
// ENTRY-LABEL: func.func @entry(
// ENTRY-SAME: %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr) {
// ENTRY: builtin.unrealized_conversion_cast %{{.+}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<4xf32>
// ENTRY: builtin.unrealized_conversion_cast %{{.+}} : !llvm.struct<(ptr, ptr, i64)> to memref<i64>
func.func @entry(%a: memref<4xf32>, %r: memref<i64>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf32>
  return
}

// -----

// An entry point that cannot take pointers is an error, not a wrapper
// that would call it wrongly.
// expected-error @+1 {{tg-pass-bare-pointers: entry point 'dynamic' has a buffer of dynamic shape or layout}}
func.func @dynamic(%d: memref<?xf32>) attributes {llvm.emit_c_interface} {
  return
}
