// A reshape of a planned value is a view: it takes its operand's bytes
// (the same tg.offset, which is how the backends recognise it), and the
// operand's buffer lives until the view's last read. A reshape of an
// argument keeps a buffer of its own.
// RUN: tg-opt %s --tg-plan-memory=func=rows | FileCheck %s --check-prefix=VIEW
// RUN: tg-opt %s --tg-plan-memory=func=arg | FileCheck %s --check-prefix=ARG
// RUN: tg-opt %s --tg-plan-memory=func=update | FileCheck %s --check-prefix=UPDATE
// RUN: tg-opt %s --tg-plan-memory=func=both | FileCheck %s --check-prefix=BOTH

// %e is 1024 bytes; its view %v is read by the matmul after %e's last
// direct read, so the buffer at 0 lives until the matmul, whose result
// (256 bytes) goes after it: one buffer less than a copy would take.
// VIEW-LABEL: func.func @rows
// VIEW-SAME: transient_bytes = 1280
// VIEW: %[[E:.*]] = tg.exp %{{.*}} {tg.bytes = 1024 : i64, tg.offset = 0 : i64}
// VIEW: tg.reshape %[[E]] {tg.bytes = 1024 : i64, tg.offset = 0 : i64}
// VIEW: tg.matmul {{.*}}tg.offset = 1024 : i64
func.func @rows(%x: tensor<2x4x32xf32> {tg.name = "x", tg.role = #tg.role<input>},
                %w: tensor<32x8xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<8x8xf32> {tg.name = "y", tg.role = #tg.role<output>}) {
  %e = tg.exp %x : tensor<2x4x32xf32>
  %v = tg.reshape %e : tensor<2x4x32xf32> to tensor<8x32xf32>
  %y = tg.matmul %v, %w : tensor<8x32xf32>, tensor<32x8xf32> -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// An argument's reshape is a copy: the view would read the argument's
// storage, where an in-place update may write before the view's last read.
// ARG-LABEL: func.func @arg
// ARG: tg.reshape {{.*}}tg.offset = 0 : i64
// ARG: tg.matmul {{.*}}tg.offset = 1024 : i64
func.func @arg(%x: tensor<2x4x32xf32> {tg.name = "x", tg.role = #tg.role<input>},
               %w: tensor<32x8xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<8x8xf32> {tg.name = "y", tg.role = #tg.role<output>}) {
  %v = tg.reshape %x : tensor<2x4x32xf32> to tensor<8x32xf32>
  %y = tg.matmul %v, %w : tensor<8x32xf32>, tensor<32x8xf32> -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// A parameter's next value computed through a view does not live in the
// parameter's storage: the buffer holds a value of another shape, and the
// backends place an argument's values by its type.
// UPDATE-LABEL: func.func @update
// UPDATE: tg.sub {{.*}}tg.offset = 0 : i64
// UPDATE: tg.reshape {{.*}}tg.offset = 0 : i64
// UPDATE-NOT: tg.alias_arg
func.func @update(%w: tensor<4x2xf32> {tg.name = "w", tg.role = #tg.role<param>},
                  %g: tensor<8xf32> {tg.name = "g", tg.role = #tg.role<input>})
    -> (tensor<4x2xf32> {tg.name = "w", tg.role = #tg.role<param>}) {
  %f = tg.reshape %w : tensor<4x2xf32> to tensor<8xf32>
  %s = tg.sub %f, %g : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %n = tg.reshape %s : tensor<8xf32> to tensor<4x2xf32>
  return %n : tensor<4x2xf32>
}

// An elementwise op that reads a value and a view of it does not write
// over either, though both die there: in general it may read the view at
// other indices than those it writes (a broadcast inside a fusion group).
// BOTH-LABEL: func.func @both
// BOTH: tg.exp {{.*}}tg.offset = 0 : i64
// BOTH: tg.reshape {{.*}}tg.offset = 0 : i64
// BOTH: tg.reshape {{.*}}tg.offset = 0 : i64
// BOTH: tg.add {{.*}}tg.offset = 256 : i64
func.func @both(%x: tensor<4x4xf32> {tg.name = "x", tg.role = #tg.role<input>})
    -> (tensor<4x4xf32> {tg.name = "y", tg.role = #tg.role<output>}) {
  %e = tg.exp %x : tensor<4x4xf32>
  %v = tg.reshape %e : tensor<4x4xf32> to tensor<16xf32>
  %b = tg.reshape %v : tensor<16xf32> to tensor<4x4xf32>
  %y = tg.add %e, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
