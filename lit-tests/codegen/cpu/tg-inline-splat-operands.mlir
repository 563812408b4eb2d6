// RUN: tg-opt %s --split-input-file --tg-inline-splat-operands | FileCheck %s

// One rank-0 splat read by two ops (as canonicalization leaves relu's zero):
// each body reads the scalar, the operand and its map are gone, and the
// tensor constant has no reader left.
// CHECK-LABEL: func.func @shared_zero(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<8xf32>
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[ID:map[0-9]*]], #[[ID]]], iterator_types = ["parallel"]} ins(%[[X]] : tensor<8xf32>) outs(
// CHECK-NEXT: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: arith.maximumf %[[IN]], %[[Z]] : f32
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel"]} ins(%[[R]] : tensor<8xf32>) outs(
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: arith.cmpf ogt
// CHECK-NOT: ins({{.*}}tensor<f32>
#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @shared_zero(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi1>) {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%x, %zero : tensor<8xf32>, tensor<f32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %z: f32, %o: f32):
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %eb = tensor.empty() : tensor<8xi1>
  %p = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%r, %zero : tensor<8xf32>, tensor<f32>) outs(%eb : tensor<8xi1>) {
  ^bb0(%in: f32, %z: f32, %o: i1):
    %c = arith.cmpf ogt, %in, %z : f32
    linalg.yield %c : i1
  } -> tensor<8xi1>
  return %r, %p : tensor<8xf32>, tensor<8xi1>
}

// -----

// A full-shape splat (a learning rate broadcast by the optimizer) and an
// integer one are read as scalars too; a constant that is not a splat, and
// a splat that is the op's output, stay operands.
// CHECK-LABEL: func.func @kinds(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<4xf32>, %[[I:[a-z0-9_]+]]: tensor<4xi64>
// CHECK-DAG: %[[TABLE:.+]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-DAG: %[[OUT:.+]] = arith.constant dense<5.000000e+00> : tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<4xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK: arith.constant 0.00999999977 : f32
// CHECK: linalg.generic {{.*}} ins(%[[I]] : tensor<4xi64>) outs(%{{.+}} : tensor<4xi64>)
// CHECK: arith.constant 7 : i64
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[TABLE]] : tensor<4xf32>, tensor<4xf32>) outs(%[[OUT]] : tensor<4xf32>)
#id = affine_map<(d0) -> (d0)>
func.func @kinds(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>, tensor<4xf32>) {
  %lr = arith.constant dense<0.01> : tensor<4xf32>
  %seven = arith.constant dense<7> : tensor<4xi64>
  %table = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %five = arith.constant dense<5.0> : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %lr : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %l: f32, %o: f32):
    %m = arith.mulf %in, %l : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi64>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%i, %seven : tensor<4xi64>, tensor<4xi64>) outs(%ei : tensor<4xi64>) {
  ^bb0(%in: i64, %s: i64, %o: i64):
    %m = arith.addi %in, %s : i64
    linalg.yield %m : i64
  } -> tensor<4xi64>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %table : tensor<4xf32>, tensor<4xf32>) outs(%five : tensor<4xf32>) {
  ^bb0(%in: f32, %t: f32, %o: f32):
    %m = arith.addf %in, %t : f32
    %n = arith.addf %m, %o : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xi64>, tensor<4xf32>
}
