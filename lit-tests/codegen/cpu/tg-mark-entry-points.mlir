// RUN: tg-opt %s --tg-mark-entry-points | FileCheck %s
// RUN: tg-opt %s --tg-mark-entry-points=functions=train_step | FileCheck %s --check-prefix=NAMED

// Public functions get a C interface; every tensor argument is read-only for
// bufferization; the model's tg.* attributes are dropped.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%{{.+}}: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @helper
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @hidden
// CHECK-NOT: llvm.emit_c_interface
// CHECK: return

// With a list, only the named functions get the C interface.
// NAMED-LABEL: func.func @train_step
// NAMED-SAME: attributes {llvm.emit_c_interface}
// NAMED-LABEL: func.func @helper
// NAMED-NOT: llvm.emit_c_interface
// NAMED: return
func.func @train_step(%w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}) {
  return %w : tensor<4xf32>
}
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @hidden(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
