// RUN: tg-opt %s --split-input-file --verify-diagnostics

// One case per verifier error of the tg dialect and its attributes.

func.func @f(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{shapes do not broadcast: 'tensor<4x3xf32>' and 'tensor<5xf32>' differ in result dimension }}
  // expected-error @+1 {{'tg.add' op failed to infer returned types}}
  %0 = tg.add %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x5xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+2 {{operands have different element types: 'tensor<4xf32>' and 'tensor<4xbf16>'}}
  // expected-error @+1 {{'tg.mul' op failed to infer returned types}}
  %0 = tg.mul %a, %b : tensor<4xf32>, tensor<4xbf16> -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4x1xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'tg.sub' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of ope}}
  // expected-error @+1 {{'tg.sub' op failed to infer returned types}}
  %0 = tg.sub %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x1xf32>
  return
}
// -----
func.func @f(%a: tensor<4xi32>) {
  // expected-error @+1 {{'tg.pow' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type o}}
  %0 = tg.pow %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return
}
// -----
func.func @f(%a: tensor<4xi1>) {
  // expected-error @+1 {{'tg.add' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type o}}
  %0 = tg.add %a, %a : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return
}
// -----
func.func @f(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+2 {{operands have different element types: 'tensor<4xf32>' and 'tensor<4xi32>'}}
  // expected-error @+1 {{'tg.cmp' op failed to infer returned types}}
  %0 = tg.cmp eq %a, %b : tensor<4xf32>, tensor<4xi32> -> tensor<4xi1>
  return
}
// -----
func.func @f(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'tg.select' op operand #0 must be statically shaped tensor of 1-bit signless integer value}}
  %0 = tg.select %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}
// -----
func.func @f(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{shapes do not broadcast: 'tensor<4xi1>' and 'tensor<2xf32>' differ in result dimension 0 a}}
  // expected-error @+1 {{'tg.select' op failed to infer returned types}}
  %0 = tg.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4xi32>) {
  // expected-error @+1 {{'tg.exp' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type o}}
  %0 = tg.exp %a : tensor<4xi32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tg.cast' op requires the same shape for all operands and results}}
  %0 = tg.cast %a : tensor<4xf32> to tensor<5xbf16>
  return
}
// -----
func.func @f(%a: tensor<?xf32>) {
  // expected-error @+1 {{'tg.relu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type }}
  %0 = tg.relu %a : tensor<?xf32>
  return
}
// -----
func.func @f(%a: tensor<4x5xf32>, %b: tensor<6x7xf32>) {
  // expected-error @+2 {{contraction dimensions differ: 'tensor<4x5xf32>' has K = 5 but 'tensor<6x7xf32>' has K = 6}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<4x5xf32>, tensor<6x7xf32> -> tensor<4x7xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>, %b: tensor<4x7xf32>) {
  // expected-error @+2 {{operands must have rank >= 2, got 'tensor<4xf32>' and 'tensor<4x7xf32>'}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<4xf32>, tensor<4x7xf32> -> tensor<7xf32>
  return
}
// -----
func.func @f(%a: tensor<2x4x5xf32>, %b: tensor<3x5x7xf32>) {
  // expected-error @+2 {{batch dimensions of 'tensor<2x4x5xf32>' and 'tensor<3x5x7xf32>' do not broadcast}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x4x5xf32>, tensor<3x5x7xf32> -> tensor<2x4x7xf32>
  return
}
// -----
func.func @f(%a: tensor<4x5xf32>, %b: tensor<5x7xf16>) {
  // expected-error @+2 {{operands have different element types: 'tensor<4x5xf32>' and 'tensor<5x7xf16>'}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<4x5xf32>, tensor<5x7xf16> -> tensor<4x7xf32>
  return
}
// -----
func.func @f(%a: tensor<4x5xf32>) {
  // expected-error @+2 {{axis 2 is out of range for a tensor of rank 2 (axes must be in [0, 2))}}
  // expected-error @+1 {{'tg.sum' op failed to infer returned types}}
  %0 = tg.sum %a axes = [2] : tensor<4x5xf32> -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4x5xf32>) {
  // expected-error @+2 {{axis 1 is listed twice}}
  // expected-error @+1 {{'tg.max' op failed to infer returned types}}
  %0 = tg.max %a axes = [1, 1] : tensor<4x5xf32> -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4x5xi32>) {
  // expected-error @+1 {{'tg.mean' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type }}
  %0 = tg.mean %a axes = [1] : tensor<4x5xi32> -> tensor<4xi32>
  return
}
// -----
func.func @f(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'tg.softmax' op axis 2 is out of range for 'tensor<4x5xf32>' (valid: -2 to 1)}}
  %0 = tg.softmax %a axis = 2 : tensor<4x5xf32>
  return
}
// -----
func.func @f(%a: tensor<f32>) {
  // expected-error @+1 {{'tg.log_softmax' op needs a tensor of rank >= 1, got 'tensor<f32>'}}
  %0 = tg.log_softmax %a axis = 0 : tensor<f32>
  return
}
// -----
func.func @f(%a: tensor<4x10xf32>, %y: tensor<5xi64>) {
  // expected-error @+2 {{labels must have the shape of the logits without their last (class) dimension: logits 'ten}}
  // expected-error @+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %a, %y : tensor<4x10xf32>, tensor<5xi64> -> tensor<f32>
  return
}
// -----
func.func @f(%a: tensor<4x10xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'tg.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integ}}
  %0 = tg.cross_entropy %a, %y : tensor<4x10xf32>, tensor<4xf32> -> tensor<f32>
  return
}
// -----
func.func @f(%a: tensor<4x10xf32>, %t: tensor<4x1xf32>) {
  // expected-error @+2 {{input and target must have the same type: 'tensor<4x10xf32>' vs 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'tg.mse_loss' op failed to infer returned types}}
  %0 = tg.mse_loss %a, %t : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<f32>
  return
}
// -----
func.func @f(%a: tensor<4x10xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op scale must be 'tensor<10xf32>' to match the last dimension of 'tensor<4}}
  %0 = tg.layer_norm %a scale(%s : tensor<8xf32>) : tensor<4x10xf32>
  return
}
// -----
func.func @f(%a: tensor<4x10xf32>, %s: tensor<10xbf16>) {
  // expected-error @+1 {{'tg.layer_norm' op bias must be 'tensor<10xf32>' to match the last dimension of 'tensor<4x}}
  %0 = tg.layer_norm %a bias(%s : tensor<10xbf16>) : tensor<4x10xf32>
  return
}
// -----
func.func @f(%a: tensor<4x10xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op eps must be > 0, got 0.000000e+00}}
  %0 = tg.layer_norm %a {eps = 0.0 : f64} : tensor<4x10xf32>
  return
}
// -----
func.func @f(%a: tensor<f32>) {
  // expected-error @+1 {{'tg.rms_norm' op needs an input of rank >= 1, got 'tensor<f32>'}}
  %0 = tg.rms_norm %a : tensor<f32>
  return
}
// -----
func.func @f(%a: tensor<4x10xf32>, %s: tensor<4x10xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op scale must be 'tensor<10xf32>' to match the last dimension of 'tensor<4x1}}
  %0 = tg.rms_norm %a scale(%s : tensor<4x10xf32>) : tensor<4x10xf32>
  return
}
// -----
func.func @f(%t: tensor<100xf32>, %i: tensor<4xi32>) {
  // expected-error @+2 {{the table must be [rows, width], got 'tensor<100xf32>'}}
  // expected-error @+1 {{'tg.embedding' op failed to infer returned types}}
  %0 = tg.embedding %t, %i : tensor<100xf32>, tensor<4xi32> -> tensor<4x100xf32>
  return
}
// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'tg.reshape' op cannot reshape 'tensor<2x3xf32>' (6 elements) to 'tensor<7xf32>' (7 elemen}}
  %0 = tg.reshape %a : tensor<2x3xf32> to tensor<7xf32>
  return
}
// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'tg.reshape' op cannot change the element type ('f32' to 'f16'); use tg.cast}}
  %0 = tg.reshape %a : tensor<2x3xf32> to tensor<6xf16>
  return
}
// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{permutation array<i64: 0, 0> is not a permutation of the 2 dimensions of 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %a perm = [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}
// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'tg.broadcast_to' op cannot broadcast 'tensor<2x3xf32>' to 'tensor<4x3xf32>'}}
  %0 = tg.broadcast_to %a : tensor<2x3xf32> to tensor<4x3xf32>
  return
}
// -----
func.func @f(%a: tensor<3xf32>) {
  // expected-error @+1 {{'tg.broadcast_to' op cannot change the element type; use tg.cast}}
  %0 = tg.broadcast_to %a : tensor<3xf32> to tensor<4x3xf16>
  return
}
// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error @+2 {{dimension 1 of size 4 cannot be sliced [2:5:1] (need 0 <= start <= limit <= size, step >= }}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %a start [0, 2] limit [4, 5] step [1, 1] : tensor<4x4xf32> -> tensor<4x3xf32>
  return
}
// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error @+2 {{start, limit and step need one value per dimension (2), got 1, 1 and 1}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %a start [0] limit [4] step [1] : tensor<4x4xf32> -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error @+2 {{axis 2 is out of range for tensors of rank 2}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a axis = 2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  return
}
// -----
func.func @f(%a: tensor<4x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{cannot concatenate 'tensor<4x4xf32>' and 'tensor<3x4xf32>' along axis 1: other dimensions }}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %b axis = 1 : tensor<4x4xf32>, tensor<3x4xf32> -> tensor<4x8xf32>
  return
}
// -----
func.func @f() {
  // expected-error @+2 {{needs at least one input}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = "tg.concat"() {axis = 0 : i64} : () -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tg.causal_mask' op needs a tensor of rank >= 2 (its last two dimensions are query and key}}
  %0 = tg.causal_mask %a : tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.dropout' op probability p must be in [0, 1), got 1.000000e+00}}
  %0 = tg.dropout %a, %s {p = 1.0 : f64} : tensor<4xf32>, tensor<i64>
  return
}
// -----
func.func @f(%a: tensor<4xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tg.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values, but got 't}}
  %0 = tg.dropout %a, %s {p = 0.5 : f64} : tensor<4xf32>, tensor<2xi64>
  return
}
// -----
func.func @f(%i: tensor<4xi64>) {
  // expected-error @+1 {{'tg.one_hot' op result must be the indices' shape plus a class dimension: indices 'tensor<}}
  %0 = tg.one_hot %i : tensor<4xi64> -> tensor<5x10xf32>
  return
}
// -----
func.func @f(%x: tensor<1x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{expects input [N, C, H, W] and weight [O, C/groups, KH, KW], got 'tensor<1x28x28xf32>' and}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w : tensor<1x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<1x6x24x24xf32>
  return
}
// -----
func.func @f(%x: tensor<1x1x28x28xf32>, %w: tensor<6x1x5x5xbf16>) {
  // expected-error @+2 {{input and weight have different element types: 'tensor<1x1x28x28xf32>' and 'tensor<6x1x5x5}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w : tensor<1x1x28x28xf32>, tensor<6x1x5x5xbf16> -> tensor<1x6x24x24xf32>
  return
}
// -----
func.func @f(%x: tensor<1x4x28x28xf32>, %w: tensor<6x2x5x5xf32>) {
  // expected-error @+2 {{groups = 3 must divide the input channels (4) and the output channels (6)}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {groups = 3 : i64} : tensor<1x4x28x28xf32>, tensor<6x2x5x5xf32> -> tensor<1x6x24x24xf32>
  return
}
// -----
func.func @f(%x: tensor<1x3x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{weight 'tensor<6x1x5x5xf32>' expects 1 input channels but the input 'tensor<1x3x28x28xf32>}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w : tensor<1x3x28x28xf32>, tensor<6x1x5x5xf32> -> tensor<1x6x24x24xf32>
  return
}
// -----
func.func @f(%x: tensor<1x1x4x4xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{the 5x5 kernel does not fit the padded 4x4 input}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w : tensor<1x1x4x4xf32>, tensor<6x1x5x5xf32> -> tensor<1x6x1x1xf32>
  return
}
// -----
func.func @f(%x: tensor<1x1x8x8xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+2 {{'stride' values must be >= 1, got [0, 1]}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {stride = array<i64: 0, 1>} : tensor<1x1x8x8xf32>, tensor<6x1x5x5xf32> -> tensor<1x6x4x4xf32>
  return
}
// -----
func.func @f(%x: tensor<1x1x8x8xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+1 {{custom op 'tg.conv2d' 'tg.conv2d' op attribute 'stride' failed to satisfy constraint: i64 }}
  %0 = tg.conv2d %x, %w {stride = array<i64: 1>} : tensor<1x1x8x8xf32>, tensor<6x1x5x5xf32> -> tensor<1x6x4x4xf32>
  return
}
// -----
func.func @f(%x: tensor<8x8xf32>) {
  // expected-error @+2 {{expects an NCHW input of rank 4, got 'tensor<8x8xf32>'}}
  // expected-error @+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel = [2, 2] stride = [2, 2] : tensor<8x8xf32> -> tensor<4x4xf32>
  return
}
// -----
func.func @f(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{padding 2 is more than half the kernel size 2}}
  // expected-error @+1 {{'tg.avg_pool2d' op failed to infer returned types}}
  %0 = tg.avg_pool2d %x kernel = [2, 2] stride = [2, 2] {padding = array<i64: 2, 2>} : tensor<1x1x8x8xf32> -> tensor<1x1x6x6xf32>
  return
}
// -----
func.func @f(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'tg.avg_pool2d' op attribute 'count_include_pad' failed to satisfy constraint: bool attribute}}
  %0 = tg.avg_pool2d %x kernel = [2, 2] stride = [2, 2] {count_include_pad = 1 : i64} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}
// -----
func.func @f(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+2 {{the 3x3 window does not fit the padded 2x2 input}}
  // expected-error @+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel = [3, 3] stride = [1, 1] : tensor<1x1x2x2xf32> -> tensor<1x1x1x1xf32>
  return
}
// -----
func.func @f(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{'stride' values must be >= 1, got [0, 2]}}
  // expected-error @+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel = [2, 2] stride = [0, 2] : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}
// -----
// expected-error @+1 {{unknown initializer 'gaussian' (expected zeros, ones, constant, normal, uniform, glorot_un}}
func.func @f(%w: tensor<4xf32> {tg.init = #tg.init<gaussian>}) {
  return
}
// -----
// expected-error @+1 {{initializer 'normal' takes 2 argument(s), got 1}}
func.func @f(%w: tensor<4xf32> {tg.init = #tg.init<normal(0.0)>}) {
  return
}
// -----
// expected-error @+1 {{normal initializer needs std > 0, got -1.000000e+00}}
func.func @f(%w: tensor<4xf32> {tg.init = #tg.init<normal(0.0, -1.0)>}) {
  return
}
// -----
// expected-error @+1 {{uniform initializer needs lo < hi, got (1.000000e+00, 0.000000e+00)}}
func.func @f(%w: tensor<4xf32> {tg.init = #tg.init<uniform(1.0, 0.0)>}) {
  return
}
// -----
// expected-error @+1 {{'func.func' op argument #0: 'tg.role' must be #tg.role<R> with R one of param, input, state, step}}
func.func @f(%w: tensor<4xf32> {tg.role = #tg.role<loss>}) {
  return
}
// -----
// expected-error @+1 {{'func.func' op argument #0: 'tg.role' must be #tg.role<R> with R one of param, input, state, step}}
func.func @f(%w: tensor<4xf32> {tg.role = "param"}) {
  return
}
// -----
// expected-error @+2 {{expected ::mlir::tg::Role to be one of: input, param, state, step, loss, output, grad}}
// expected-error @+1 {{failed to parse TG_RoleAttr parameter 'value'}}
func.func @f(%w: tensor<4xf32> {tg.role = #tg.role<weight>}) {
  return
}
// -----
// expected-error @+1 {{'func.func' op argument #0: 'tg.name' must be a non-empty string}}
func.func @f(%w: tensor<4xf32> {tg.name = ""}) {
  return
}
// -----
// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be a #tg.init attribute}}
func.func @f(%w: tensor<4xf32> {tg.init = "zeros"}) {
  return
}
// -----
// expected-error @+1 {{'func.func' op argument #0: 'tg.init' on a non-float argument; only float parameters are i}}
func.func @f(%w: tensor<4xi64> {tg.init = #tg.init<zeros>}) {
  return
}
// -----
// expected-error @+1 {{'func.func' op argument #0: unknown tg attribute 'tg.shape'}}
func.func @f(%w: tensor<4xf32> {tg.shape = 3}) {
  return
}
// -----
// expected-error @+1 {{'func.func' op result #0: 'tg.role' must be #tg.role<R> with R one of loss, output, grad, param, state, step}}
func.func @f(%w: tensor<4xf32>) -> (tensor<4xf32> {tg.role = #tg.role<input>}) {
  return %w : tensor<4xf32>
}
// -----
// expected-error @+1 {{'builtin.module' op 'tg.hyper' must be a dictionary}}
module attributes {tg.hyper = 3} {
}
// -----
// expected-error @+1 {{'builtin.module' op 'tg.model' must be a string}}
module attributes {tg.model = 3} {
}
// -----
// expected-error @+1 {{'builtin.module' op unknown tg attribute 'tg.optimizer'}}
module attributes {tg.optimizer = "adam"} {
}
// -----
// expected-error @+1 {{'func.func' op 'tg.memory' must be a #tg.memory<...> plan}}
func.func @f() attributes {tg.memory = {transient_bytes = 8 : i64}} {
  return
}
// -----
// expected-error @+1 {{#tg.memory sizes must not be negative}}
func.func @f() attributes {tg.memory = #tg.memory<params_bytes = 0, optimizer_bytes = 0, inputs_bytes = 0, grads_bytes = 0, activations_bytes = 0, workspace_bytes = 0, persistent_bytes = 0, transient_bytes = -8, peak_bytes = 0, lower_bound_bytes = 0, naive_bytes = 0>} {
  return
}
// -----
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.relu' op 'tg.offset' must be an integer}}
  %0 = tg.relu %x {tg.offset = "0"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// -----
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.relu' op 'tg.offsets' must be an i64 array}}
  %0 = tg.relu %x {tg.offsets = [0]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// -----
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.relu' op 'tg.scratch' must be a non-negative i64 (bytes)}}
  %0 = tg.relu %x {tg.scratch = "4096"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// -----
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.relu' op 'tg.scratch' must be a non-negative i64 (bytes)}}
  %0 = tg.relu %x {tg.scratch = 4096 : i32} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// -----
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.relu' op 'tg.scratch_offset' must be a non-negative i64 (bytes)}}
  %0 = tg.relu %x {tg.scratch = 64 : i64, tg.scratch_offset = -256 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// -----
// expected-error @+1 {{'func.func' op 'tg.remat' must be a #tg.remat<...> record}}
func.func @f() attributes {tg.remat = {bytes = 1 : i64}} {
  return
}
// -----
// expected-error @+1 {{'func.func' op 'tg.budget_fit' applies only to modules}}
func.func @f() attributes {tg.budget_fit = #tg.budget_fit<choice = "none", level = 0, micro_batches = 1, zero = 0, precision = "fp32", budget = 1, peak = 1, unconstrained = 1, extra_flops = 0, step_flops = 0, fits = true>} {
  return
}
// -----
// expected-error @+1 {{#tg.budget_fit choice must be none, shard, recompute, micro-batch or precision, got 'magic'}}
module attributes {tg.budget_fit = #tg.budget_fit<choice = "magic", level = 0, micro_batches = 1, zero = 0, precision = "fp32", budget = 1, peak = 1, unconstrained = 1, extra_flops = 0, step_flops = 0, fits = true>} {
}
// -----
// expected-error @+1 {{#tg.budget_fit choice 'shard' needs zero = 1}}
module attributes {tg.budget_fit = #tg.budget_fit<choice = "shard", level = 0, micro_batches = 1, zero = 0, precision = "fp32", budget = 1, peak = 1, unconstrained = 1, extra_flops = 0, step_flops = 0, fits = true>} {
}
// -----
// expected-error @+1 {{#tg.budget_fit zero must be 0 or 1}}
module attributes {tg.budget_fit = #tg.budget_fit<choice = "none", level = 0, micro_batches = 1, zero = 2, precision = "fp32", budget = 1, peak = 1, unconstrained = 1, extra_flops = 0, step_flops = 0, fits = true>} {
}
// -----
// expected-error @+1 {{'func.func' op argument #0: 'tg.arena' must be a unit attribute}}
func.func @f(%a: memref<8xi8> {tg.arena = 1}) {
  return
}

// -----
func.func @f(%g: tensor<2x5x16xf32>, %ids: tensor<2x5xi32>) {
  // expected-error @+1 {{'tg.embedding_grad' op gradient 'tensor<2x5x16xf32>' does not match an embedding of 'tensor<100x8xf32>' by indices 'tensor<2x5xi32>'}}
  %0 = tg.embedding_grad %g, %ids : tensor<2x5x16xf32>, tensor<2x5xi32> -> tensor<100x8xf32>
  return
}
// -----
func.func @f(%g: tensor<8x6x20x20xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+1 {{'tg.conv2d_grad_input' op gradient 'tensor<8x6x20x20xf32>' does not match the convolution output 'tensor<8x6x24x24xf32>'}}
  %0 = tg.conv2d_grad_input %g, %w : tensor<8x6x20x20xf32>, tensor<6x1x5x5xf32> -> tensor<8x1x28x28xf32>
  return
}
// -----
func.func @f(%x: tensor<8x1x28x28xf32>, %g: tensor<8x6x24x24xf32>) {
  // expected-error @+1 {{'tg.conv2d_grad_weight' op gradient 'tensor<8x6x24x24xf32>' does not match the convolution output 'tensor<8x6x26x26xf32>'}}
  %0 = tg.conv2d_grad_weight %x, %g : tensor<8x1x28x28xf32>, tensor<8x6x24x24xf32> -> tensor<6x1x3x3xf32>
  return
}
// -----
func.func @f(%g: tensor<8x1x7x7xf32>, %x: tensor<8x1x28x28xf32>) {
  // expected-error @+1 {{'tg.max_pool2d_grad' op gradient 'tensor<8x1x7x7xf32>' does not match the pooling output 'tensor<8x1x14x14xf32>'}}
  %0 = tg.max_pool2d_grad %g, %x kernel = [2, 2] stride = [2, 2] : tensor<8x1x7x7xf32>, tensor<8x1x28x28xf32>
  return
}
// -----
func.func @f(%g: tensor<8x1x7x7xf32>) {
  // expected-error @+1 {{'tg.avg_pool2d_grad' op gradient 'tensor<8x1x7x7xf32>' does not match the pooling output 'tensor<8x1x14x14xf32>'}}
  %0 = tg.avg_pool2d_grad %g kernel = [2, 2] stride = [2, 2] : tensor<8x1x7x7xf32> -> tensor<8x1x28x28xf32>
  return
}
// -----
func.func @f(%s: tensor<i64>) {
  // expected-error @+1 {{'tg.random' op uniform bounds need a < b, got [1.000000e+00, 1.000000e+00)}}
  %0 = tg.random uniform %s {a = 1.0 : f64, b = 1.0 : f64, stream = 0 : i64} : tensor<i64> -> tensor<4xf32>
  return
}
// -----
func.func @f(%s: tensor<i64>) {
  // expected-error @+1 {{'tg.random' op normal std (b) must be > 0, got 0.000000e+00}}
  %0 = tg.random normal %s {a = 0.0 : f64, b = 0.0 : f64, stream = 0 : i64} : tensor<i64> -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<2x2xbf16>) -> tensor<2x2xbf16> {
  // expected-error @+1 {{'tg.add' op 'tg.acc' applies only to matmul, conv2d and the conv2d gradients}}
  %0 = tg.add %a, %a {tg.acc = f32} : tensor<2x2xbf16>, tensor<2x2xbf16> -> tensor<2x2xbf16>
  return %0 : tensor<2x2xbf16>
}
// -----
func.func @f(%a: tensor<2x2xbf16>) -> tensor<2x2xbf16> {
  // expected-error @+1 {{'tg.matmul' op 'tg.acc' must be a float type}}
  %0 = tg.matmul %a, %a {tg.acc = i32} : tensor<2x2xbf16>, tensor<2x2xbf16> -> tensor<2x2xbf16>
  return %0 : tensor<2x2xbf16>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.matmul' op 'tg.acc' = 'bf16' is narrower than the result's element type or the result is not a float}}
  %0 = tg.matmul %a, %a {tg.acc = bf16} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.relu' op 'tg.precision' must be a string (the precision rule)}}
  %0 = tg.relu %a {tg.precision = 1 : i64} : tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.fused' op of kind gemm must hold exactly one tg.matmul, found 0}}
  %0 = tg.fused <gemm> ins(%a : tensor<2x2xf32>) {
  ^bb0(%x: tensor<2x2xf32>):
    %r = tg.relu %x : tensor<2x2xf32>
    tg.yield %r : tensor<2x2xf32>
  } -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.fused' op of kind elementwise must hold no matmul or reduction}}
  %0 = tg.fused <elementwise> ins(%a : tensor<2x2xf32>) {
  ^bb0(%x: tensor<2x2xf32>):
    %r = tg.matmul %x, %x : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    tg.yield %r : tensor<2x2xf32>
  } -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.fused' op result #0 is an input of the group; a group's results are values it computes}}
  %0 = tg.fused <elementwise> ins(%a : tensor<2x2xf32>) {
  ^bb0(%x: tensor<2x2xf32>):
    tg.yield %x : tensor<2x2xf32>
  } -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.fused' op input #0 has type 'tensor<2x2xf32>' but body argument #0 has type 'tensor<2x2xf16>'}}
  %0 = tg.fused <elementwise> ins(%a : tensor<2x2xf32>) {
  ^bb0(%x: tensor<2x2xf16>):
    %r = tg.relu %x : tensor<2x2xf16>
    %c = tg.cast %r : tensor<2x2xf16> to tensor<2x2xf32>
    tg.yield %c : tensor<2x2xf32>
  } -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.relu' op 'tg.flops' applies only to tg.fused}}
  %0 = tg.relu %a {tg.flops = 4 : i64} : tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.fused' op 'tg.bytes_read' must be a non-negative integer}}
  %0 = tg.fused <elementwise> ins(%a : tensor<2x2xf32>) attributes {tg.bytes_read = -1 : i64} {
  ^bb0(%x: tensor<2x2xf32>):
    %r = tg.relu %x : tensor<2x2xf32>
    tg.yield %r : tensor<2x2xf32>
  } -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
// -----
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{expected ::mlir::tg::KernelKind to be one of: gemm, elementwise, row_reduction, reduction, optimizer}}
  // expected-error @+1 {{failed to parse TG_KernelKindAttr parameter 'value'}}
  %0 = tg.fused <conv> ins(%a : tensor<2x2xf32>) {
  ^bb0(%x: tensor<2x2xf32>):
    %r = tg.relu %x : tensor<2x2xf32>
    tg.yield %r : tensor<2x2xf32>
  } -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @f(%q: tensor<2x8x16xf32>) {
  // expected-error @+2 {{query, key and value must be [B, H, T, d], got 'tensor<2x8x16xf32>', 'tensor<2x8x16xf32>' and 'tensor<2x8x16xf32>'}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %o, %l = tg.attention %q, %q, %q {scale = 1.0 : f64} : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<2x8xf32>
  return
}
// -----
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x8xf32>) {
  // expected-error @+2 {{query and key must have the same head dimension d, got 'tensor<1x2x8x16xf32>' and 'tensor<1x2x8x8xf32>'}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %o, %l = tg.attention %q, %k, %q {scale = 1.0 : f64} : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  return
}
// -----
func.func @f(%q: tensor<1x2x8x16xf32>, %v: tensor<1x2x7x16xf32>) {
  // expected-error @+2 {{key and value must have the same length T, got 'tensor<1x2x8x16xf32>' and 'tensor<1x2x7x16xf32>'}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %o, %l = tg.attention %q, %q, %v {scale = 1.0 : f64} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x7x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  return
}
// -----
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x3x8x16xf32>) {
  // expected-error @+2 {{query, key and value must have the same batch and head dimensions [B, H, ...]}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %o, %l = tg.attention %q, %k, %k {scale = 1.0 : f64} : tensor<1x2x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  return
}
// -----
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xbf16>) {
  // expected-error @+2 {{query, key and value have different element types}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %o, %l = tg.attention %q, %k, %k {scale = 1.0 : f64} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  return
}
// -----
func.func @f(%q: tensor<1x2x8x16xbf16>) {
  // expected-error @+2 {{'tg.attention' op inferred type(s) 'tensor<1x2x8x16xbf16>', 'tensor<1x2x8xf32>' are incompatible with return type(s) of operation 'tensor<1x2x8x16xbf16>', 'tensor<1x2x8xbf16>'}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %o, %l = tg.attention %q, %q, %q {scale = 1.0 : f64} : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>, tensor<1x2x8xbf16>
  return
}
// -----
func.func @f(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+2 {{scale must be finite, got}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %o, %l = tg.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  return
}
// -----
func.func @f(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %bad: tensor<1x2x8x4xf32>) {
  // expected-error @+2 {{the output must be 'tensor<1x2x8x16xf32>' (from query, key and value), got 'tensor<1x2x8x4xf32>'}}
  // expected-error @+1 {{'tg.attention_grad' op failed to infer returned types}}
  %a, %b, %c = tg.attention_grad %q, %l, %q, %q, %q, %bad, %l {scale = 1.0 : f64} : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return
}

// -----

func.func @f() {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.all_reduce' op needs at least one tensor (a bucket is never empty)}}
  "tg.all_reduce"(%w) {op = "mean"} : (!tg.comm<ranks = 2>) -> ()
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.all_reduce' op op must be "sum" or "mean", got "max"}}
  %0 = tg.all_reduce %a on %w {op = "max"} : !tg.comm<ranks = 2>, tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{a communicator has at least 1 rank, got 0}}
  %w = tg.comm_world : !tg.comm<ranks = 0>
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  // expected-note @+1 {{prior use here}}
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{use of value '%w' expects different type than prior uses: '!tg.comm<ranks = 3>' vs '!tg.comm<ranks = 2>'}}
  %0 = tg.all_reduce %a on %w {op = "mean"} : !tg.comm<ranks = 3>, tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_reduce' op operand #0 must be a communicator: the group of ranks a collective runs over, but got 'tensor<4xf32>'}}
  %0 = "tg.all_reduce"(%a, %a) {op = "mean"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.all_reduce' op bucket_offset must be a byte offset in the arena (at least 0), got -256}}
  %0 = tg.all_reduce %a on %w {op = "mean", bucket_offset = -256 : i64} : !tg.comm<ranks = 2>, tensor<4xf32>
  return
}
// -----
// expected-error @+1 {{'builtin.module' op 'tg.ranks' must be an integer of at least 1 (the number of ranks)}}
module attributes {tg.ranks = 0 : i64} {}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: target must be sm_80 or sm_90a, got 'sm_70'}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_70">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: on sm_80 each warp's tile (bm/warps_m x bn/warps_n) must be a multiple of 16x16}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 8, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: consumer_warpgroups and persistent are sm_90a's; on sm_80 they must be 0 and false}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = true, target = "sm_80">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: the operand ring needs 262144 bytes of shared memory, over sm_80's 166912}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 128, bn = 128, bk = 64, stages = 8, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: on sm_90a bm must be 64 x consumer_warpgroups (1 or 2)}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 128, bn = 128, bk = 64, stages = 4, group_m = 8, warps_m = 1, warps_n = 1, consumer_warpgroups = 1, persistent = true, target = "sm_90a">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: on sm_90a bn must be a multiple of 64 up to 256 and bk 64 (one 128-byte swizzle row)}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 96, bk = 64, stages = 4, group_m = 8, warps_m = 1, warps_n = 1, consumer_warpgroups = 1, persistent = true, target = "sm_90a">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: bk must be a multiple of 16 and stages at least 2}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 24, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: kernel must be tensor_core, mma_sync, wgmma_staged or simt, got 'wmma'}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80", kernel = "wmma">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: kernel "mma_sync" is sm_80's kernel on sm_90a; on sm_80 it is the tensor_core kernel}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80", kernel = "mma_sync">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: kernel "wgmma_staged" is sm_90a's wgmma kernel over realigned copies; sm_80 has no TMA}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80", kernel = "wgmma_staged">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // The staged wgmma kernel keeps sm_90a's fields.
  // expected-error @+1 {{#tg.tile_config: on sm_90a bm must be 64 x consumer_warpgroups (1 or 2)}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_90a", kernel = "wgmma_staged">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // The mma.sync kernel on sm_90a keeps sm_80's fields: no consumer warpgroups.
  // expected-error @+1 {{#tg.tile_config: consumer_warpgroups and persistent are sm_90a's; on sm_80 they must be 0 and false}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 128, bn = 128, bk = 64, stages = 4, group_m = 8, warps_m = 1, warps_n = 1, consumer_warpgroups = 2, persistent = true, target = "sm_90a", kernel = "mma_sync">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{#tg.tile_config: the simt kernel has one tile: bm = bn = 64, bk = 16, stages = group_m = warps_m = warps_n = 1, no consumer_warpgroups, not persistent}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80", kernel = "simt">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{'tg.matmul' op 'tg.tile_configs' has two configs for sm_80}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">, #tg.tile_config<bm = 128, bn = 128, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{'tg.relu' op 'tg.tile_configs' applies only to tg.matmul and gemm groups}}
  %0 = tg.relu %a {tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">]} : tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
func.func @f(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  // expected-error @+1 {{'tg.matmul' op 'tg.tile_configs' must be a non-empty array of #tg.tile_config<...>}}
  %0 = tg.matmul %a, %a {tg.tile_configs = [{bm = 64}]} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
// -----
// expected-error @+1 {{'builtin.module' op 'tg.zero' must be 1 (ZeRO stage 1, the one implemented)}}
module attributes {tg.zero = 3 : i64} {}
// -----
// expected-error @+1 {{'func.func' op argument #0: 'tg.shard_of' must be an i64 array of non-negative dimensions}}
func.func @f(%a: tensor<4xf32> {tg.shard_of = array<i64: -1>}) {
  return
}
// -----
func.func @f() {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.reduce_scatter' op needs at least one tensor (a bucket is never empty)}}
  "tg.reduce_scatter"(%w) {op = "mean"} : (!tg.comm<ranks = 2>) -> ()
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.reduce_scatter' op op must be "sum" or "mean", got "max"}}
  %0 = tg.reduce_scatter %a on %w {op = "max"} : !tg.comm<ranks = 2>, tensor<4xf32> -> tensor<2xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.reduce_scatter' op bucket_offset must be a byte offset in the arena (at least 0), got -1}}
  %0 = tg.reduce_scatter %a on %w {op = "mean", bucket_offset = -1 : i64} : !tg.comm<ranks = 2>, tensor<4xf32> -> tensor<2xf32>
  return
}
// -----
func.func @f() {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.all_gather' op needs at least one tensor (a bucket is never empty)}}
  "tg.all_gather"(%w) : (!tg.comm<ranks = 2>) -> ()
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.all_gather' op has 2 whole tensors but 1 shards; each tensor has one shard}}
  %0:2 = "tg.all_gather"(%w, %a) : (!tg.comm<ranks = 2>, tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.all_gather' op shard #0 is 'tensor<4xf32>' but one of 2 shards of 'tensor<3x3xf32>' is 'tensor<5xf32>'}}
  %0 = tg.all_gather %a on %w : !tg.comm<ranks = 2>, tensor<4xf32> -> tensor<3x3xf32>
  return
}
// -----
func.func @f(%a: tensor<4xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.all_gather' op bucket_offset must be a byte offset in the arena (at least 0), got -4}}
  %0 = tg.all_gather %a on %w {bucket_offset = -4 : i64} : !tg.comm<ranks = 2>, tensor<4xf32> -> tensor<8xf32>
  return
}
// -----
func.func @f(%a: tensor<9xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  // expected-error @+1 {{'tg.shard' op shard #0 is 'tensor<4xf32>' but one of 2 shards of 'tensor<9xf32>' is 'tensor<5xf32>'}}
  %0 = tg.shard %a on %w : !tg.comm<ranks = 2>, tensor<9xf32> -> tensor<4xf32>
  return
}
// -----
func.func @f(%a: tensor<9xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 3>
  // expected-error @+1 {{'tg.reduce_scatter' op shard #0 is 'tensor<9xf32>' but one of 3 shards of 'tensor<9xf32>' is 'tensor<3xf32>'}}
  %0 = tg.reduce_scatter %a on %w {op = "sum"} : !tg.comm<ranks = 3>, tensor<9xf32> -> tensor<9xf32>
  return
}
