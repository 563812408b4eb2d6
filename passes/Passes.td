//===- Passes.td - every TGC pass --------------------------*- tablegen -*-===//
//
// The one place where TGC's passes are declared. Each pass lives in the .cpp
// named after its def.
//
//===----------------------------------------------------------------------===//

#ifndef TG_PASSES_TD
#define TG_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposeCompositesPass : Pass<"tg-decompose"> {
  let summary = "Rewrite composite tg ops into primitive tg ops";
  let description = [{
    softmax, log_softmax, gelu, silu, sigmoid, layer_norm, rms_norm,
    cross_entropy and mse_loss are ops in their own right so that autodiff
    and fusion can treat them as units. Backends that lack a kernel for one
    of them call this pass, which rewrites each into primitive tg ops
    (elementwise arithmetic, reductions, one_hot, select) with the same
    numerics: softmax subtracts the row maximum, cross_entropy averages over
    the positions whose label is not ignore_index.

    ```mlir
    %p = tg.softmax %x axis = 1 : tensor<4x10xf32>
    // becomes
    %m = tg.max %x axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
    %d = tg.sub %x, %m : ...
    %e = tg.exp %d : tensor<4x10xf32>
    %s = tg.sum %e axes = [1] keepdims : ...
    %p = tg.div %e, %s : ...
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Decompose only these ops (by name without the 'tg.' prefix, "
               "e.g. ops=softmax,gelu); all composites when empty">,
  ];
}

def AutodiffPass : Pass<"tg-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of a model's forward function";
  let description = [{
    Adds `@<func>_grad`, a copy of the forward function that also returns the
    gradient of its loss (the result tagged `tg.role = #tg.role<loss>`) with respect
    to every parameter (arguments tagged `tg.role = #tg.role<param>`), and with
    `wrt-inputs` to every float input too. Gradient results are tagged
    `tg.role = #tg.role<grad>` and carry the parameter's `tg.name`.

    The backward ops come from each op's `DifferentiableOpInterface::buildVJP`;
    this pass only walks the graph in reverse, sums cotangents where a value
    fans out, gives unused parameters zero gradients, and treats integer
    values (labels, token ids) and non-differentiable tg ops (cmp, one_hot,
    constant) as constants.

    ```mlir
    func.func @forward(%x: tensor<4x3xf32> {tg.role = #tg.role<input>, ...},
                       %w: tensor<3x2xf32> {tg.role = #tg.role<param>, tg.name = "w"}, ...)
        -> (tensor<f32> {tg.role = #tg.role<loss>})
    // gains
    func.func @forward_grad(...) -> (tensor<f32> {tg.role = #tg.role<loss>},
                                     tensor<3x2xf32> {tg.role = #tg.role<grad>, tg.name = "w"})
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    Option<"funcName", "func", "std::string", "\"forward\"",
           "Name of the function to differentiate">,
    Option<"wrtInputs", "wrt-inputs", "bool", "false",
           "Also differentiate with respect to float inputs">,
  ];
}

def AssignPrecisionPass : Pass<"tg-assign-precision", "::mlir::ModuleOp"> {
  let summary = "Choose every tensor's element type for mixed-precision training";
  let description = [{
    Reads `precision` from the module's `tg.train` (or the `precision`
    option) and rewrites the forward function so that every decision is an
    explicit op or attribute; runs before tg-build-train-step, so autodiff
    differentiates the casts (the VJP of a cast is the cast back: gradients
    of the fp32 masters arrive in fp32). `fp32` changes nothing. For `bf16`
    and `fp16` (rules then spelled `fp16-...`; tg-build-train-step adds the
    dynamic loss scaling fp16 needs), each op the pass touches gets
    `tg.precision = "<rule>"`:

    - parameters stay fp32 arguments (the masters; the optimizer state and
      update stay fp32 with them); each one that a low-precision op reads
      gets one `tg.cast` to bf16 at the top of the function
      (`compute-copy`), shared by every use in the forward and backward;
    - matmul and conv2d take bf16 operands and accumulate in fp32
      (`tg.acc = f32`, rule `bf16-acc-f32`);
    - softmax and log_softmax read and write bf16 and compute in fp32
      inside the op (`bf16-io-f32-math`; every backend and tg-decompose
      compute a bf16 composite in fp32 and round once), so attention
      probabilities are stored in bf16;
    - layer_norm, rms_norm, cross_entropy, mse_loss, sum and mean take fp32
      operands (`fp32-sensitive`: their bf16 operands are cast up);
    - every other op computes in bf16 when one of its float operands is
      bf16 (`follow`; its fp32 operands are cast down), and in fp32
      otherwise;
    - the function's results keep their declared types (`output`).

    ```mlir
    // before
    %y = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
    // after
    %wc = tg.cast %w {tg.precision = "compute-copy"} : tensor<4x2xf32> to tensor<4x2xbf16>
    %xc = tg.cast %x {tg.precision = "bf16-acc-f32"} : tensor<8x4xf32> to tensor<8x4xbf16>
    %y = tg.matmul %xc, %wc {tg.acc = f32, tg.precision = "bf16-acc-f32"} : tensor<8x4xbf16>, tensor<4x2xbf16> -> tensor<8x2xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    Option<"funcName", "func", "std::string", "\"forward\"",
           "Name of the model's forward function">,
    Option<"precision", "precision", "std::string", "\"\"",
           "fp32, bf16 or fp16; empty: the train block's precision (fp32 "
           "without one)">,
  ];
}

def BuildTrainStepPass : Pass<"tg-build-train-step", "::mlir::ModuleOp"> {
  let summary = "Build init, train_step and eval from a model and its train block";
  let description = [{
    From the forward function and the module's `tg.train` attribute (the
    model's `train` block) this pass adds:

    - `@<func>_grad`, as tg-autodiff does;
    - `@train_step(params..., state..., step, inputs...) -> (loss,
      params..., state..., step)`: forward, backward, optional global-norm
      clipping, the learning-rate schedule and the optimizer update (SGD,
      momentum/Nesterov, Adam, AdamW). Results with the same `tg.name` as an
      argument are its new value, so a runtime updates them in place. With
      `accumulate = K` the inputs hold K micro-batches (K times the model's
      batch rows); an `scf.for` runs forward and backward on each and
      averages the loss and the gradients before one update;
    - `@init(seed) -> (params..., state..., step)`: parameters from their
      `#tg.init` through counter-based `tg.random` (one stream per
      parameter), zero optimizer state, step 0;
    - `@eval`: the forward function under a stable name.

    State is named `<param>.<slot>` with slots `momentum` (momentum) or
    `exp_avg`, `exp_avg_sq` (adam, adamw), as in PyTorch's optimizer state.

    With `precision = "fp16"` in `tg.train` the step scales the loss
    dynamically (PyTorch's GradScaler; `loss_scale = {init, growth,
    backoff, interval}` overrides its defaults): two more state tensors,
    `loss_scale` (f32) and `loss_scale.growth_tracker` (i64); `@<func>_grad`
    takes `loss_scale` as its last argument, seeds the backward pass with it
    and divides the gradients by it; `@train_step` checks every gradient
    for inf/NaN once and, if it finds one, returns every parameter, state
    tensor and the step unchanged, and halves the scale; after `interval`
    finite steps in a row the scale doubles.
  }];
  let dependentDialects = [
    "::mlir::tg::TGDialect", "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"funcName", "func", "std::string", "\"forward\"",
           "Name of the model's forward function">,
  ];
}

def DataParallelPass : Pass<"tg-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Average @train_step's gradients (and loss) over the ranks of a data-parallel job";
  let description = [{
    Every rank runs the same `@train_step` on its own shard of the global
    batch; this pass makes the optimizer see the gradient of the whole
    batch. It groups the parameter gradients into buckets of about
    `bucket-bytes` bytes, in backward order (the last parameter's gradient,
    which the backward pass completes first, opens the first bucket), and
    inserts one `tg.all_reduce {op = "mean"}` per bucket right after the
    point where the bucket's gradients are complete: after the call of the
    gradient function, or, with gradient accumulation, after the
    micro-batch loop (so a step communicates once, not once per
    micro-batch). The loss is averaged too, so every rank reports the loss
    of the global batch. The module gets `tg.ranks`. With `ranks = 1` the
    pass changes nothing.
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", "1",
           "Number of ranks (processes) of the job">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25 * 1024 * 1024",
           "Bytes of gradients per all_reduce (one bucket)">,
  ];
}

def PlanMemoryPass : Pass<"tg-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Schedule a function and place every buffer in one arena";
  let description = [{
    Plans the memory of one function (by default `@train_step`): inlines its
    calls, reorders its ops by memory-aware list scheduling (the ready op
    that adds the fewest live bytes first), computes each tensor's lifetime,
    lets elementwise results overwrite an operand that dies there, and gives
    every buffer an offset (greedy by size, best fit, aligned). Arguments
    (parameters, optimizer state, inputs) form a persistent region apart
    from the reused transient one. Loop bodies (gradient accumulation) are
    planned as regions of their own, held by one buffer while the loop runs.

    The plan is IR: `tg.offset` and `tg.bytes` on every op that produces a
    buffer, and `tg.memory` on the function, a dictionary with
    params/optimizer/inputs/grads/activations/workspace bytes, the
    persistent and transient region sizes, the peak, the lower bound (the
    most bytes live at once) and the naive sum of all buffers.
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    Option<"funcName", "func", "std::string", "\"train_step\"",
           "Name of the function to plan">,
    Option<"alignment", "alignment", "int64_t", "256",
           "Byte alignment of every buffer">,
    Option<"reorder", "reorder", "bool", "true",
           "Reorder ops to lower the peak (memory-aware list scheduling)">,
    Option<"inPlace", "in-place", "bool", "true",
           "Let elementwise results reuse a dying operand's buffer">,
  ];
}

def RematerializePass : Pass<"tg-rematerialize", "::mlir::ModuleOp"> {
  let summary = "Recompute cheap activations in the backward pass instead of keeping them";
  let description = [{
    In a gradient function (`@<func>_grad`, built by tg-autodiff), an
    activation is a forward value that backward ops read, so it stays live
    from the forward pass to its last backward use. This pass lets the
    backward pass recompute chosen activations right before their first
    backward use, from values that are kept anyway (arguments, constants
    and activations that are not recomputed), so the originals die at the
    end of the forward pass.

    Candidates are chains of at most `max-depth` ops that contain no matmul
    or convolution; they are taken largest first while each recomputes at
    most `max-flops-per-byte` floating-point operations per byte it frees.
    Recomputed dropout uses the same seed and stream, so results are
    unchanged. Each recomputed op is marked `tg.recomputed`; the function
    gets `tg.remat = #tg.remat<bytes = N, flops = M>`. Run it after CSE, which would merge a
    recomputation back into its original.
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    Option<"funcName", "func", "std::string", "\"forward_grad\"",
           "Name of the gradient function">,
    Option<"maxDepth", "max-depth", "unsigned", "2",
           "Longest chain of ops recomputed for one activation">,
    Option<"maxFlopsPerByte", "max-flops-per-byte", "double", "4.0",
           "Most recomputation FLOPs accepted per byte freed">,
  ];
}

#endif // TG_PASSES_TD
