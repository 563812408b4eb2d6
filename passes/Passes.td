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
    cross_entropy, mse_loss, attention and attention_grad are ops in their
    own right so that autodiff
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

def FormAttentionPass : Pass<"tg-form-attention"> {
  let summary = "Recognise matmul-scale-mask-softmax-matmul as tg.attention";
  let description = [{
    Models written before `attention` was a built-in (or ported from code
    that spells attention out) compute `softmax(mask(scale * q k^T)) @ v`,
    which keeps the `[B, H, T, T]` probabilities for the backward pass.
    This pass rewrites that chain into one `tg.attention`, whose backward
    pass needs only the output and one log-sum-exp per row.

    It matches, from the last matmul back: `tg.matmul %p, %v` (no
    transposes) of `tg.softmax` over the last axis of an optional
    `tg.causal_mask` (value -inf) and an optional scaling (`tg.mul` or
    `tg.div` by a rank-0 or splat constant; a scale after the mask must be
    positive) of `tg.matmul %q, %k {transpose_rhs}`, with q, k and v
    `[B, H, T, d]` tensors of one float type. Every intermediate value must
    have that one use; anything else is left alone. Runs first in the
    training pipeline, before precision assignment and autodiff.

    ```mlir
    %s = tg.matmul %q, %k {transpose_rhs} : ...
    %c = tg.mul %s, %scale : ...
    %m = tg.causal_mask %c : ...
    %p = tg.softmax %m axis = -1 : ...
    %o = tg.matmul %p, %v : ...
    // becomes
    %o, %lse = tg.attention %q, %k, %v {causal, scale = 1.250000e-01 : f64} : ...
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
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
    - attention takes bf16 query, key and value and gives a bf16 output;
      its matmuls accumulate and its softmax statistics (the stored
      log-sum-exp included) stay in fp32 (`bf16-attention`);
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
    of the global batch. The collectives run over one communicator,
    `%world = tg.comm_world : !tg.comm<ranks = N>`, made at the top of
    `@train_step`. The module gets `tg.ranks`. With `ranks = 1` the pass
    changes nothing, unless `keep-collectives` asks for the collectives
    anyway (over a communicator of one rank: a mean is the identity), so
    that a one-rank job measures what communicating costs.

    With `zero = 1` (ZeRO stage 1) each rank keeps and updates 1/N of the
    optimizer state instead: the gradient buckets are
    `tg.reduce_scatter {op = "mean"}` (each rank receives its flat shard of
    every averaged gradient, `ceil(n / N)` elements, the last padded with
    zeros), each rank applies the optimizer to its shards of the parameters
    (`tg.shard`), gradients and state (so clip_grad_norm's sum of squares
    and the loss scaler's finite check become one `tg.all_reduce {op =
    "sum"}` of a scalar), and `tg.all_gather` buckets the updated parameter
    shards back into whole parameters. The per-parameter state arguments
    and results of `@train_step` (and results of `@init`) become the flat
    shards, marked `tg.shard_of = array<i64: full shape>`; the module gets
    `tg.zero = 1`.

    With `comm-dtype = bf16` (or `f16`) the f32 gradients are cast to that
    type right before their bucket's `tg.all_reduce` (or
    `tg.reduce_scatter`), which then communicates half the bytes, and its
    results are cast back to f32 for the optimizer; the loss, the global
    sums and ZeRO's parameter all_gather stay f32. The default, f32, keeps
    the precision contract (f32 gradients) exact.

    ```mlir
    %world = tg.comm_world : !tg.comm<ranks = 2>
    %s:2 = tg.reduce_scatter %gb, %gw on %world {op = "mean"} : !tg.comm<ranks = 2>, tensor<10xf32>, tensor<32x10xf32> -> tensor<5xf32>, tensor<160xf32>
    %pw = tg.shard %w on %world : !tg.comm<ranks = 2>, tensor<32x10xf32> -> tensor<160xf32>
    ... the optimizer on %pw, %s#1 and the state shard %m : tensor<160xf32>
    %w2 = tg.all_gather %nw on %world : !tg.comm<ranks = 2>, tensor<160xf32> -> tensor<32x10xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", "1",
           "Number of ranks (processes) of the job">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25 * 1024 * 1024",
           "Bytes of gradients per all_reduce (one bucket)">,
    Option<"zero", "zero", "int64_t", "0",
           "ZeRO stage: 0 replicates the optimizer state, 1 shards it over "
           "the ranks">,
    Option<"keepCollectives", "keep-collectives", "bool", "false",
           "With ranks = 1, insert the collectives anyway (over a "
           "communicator of one rank), to measure their cost">,
    Option<"commDtype", "comm-dtype", "std::string", "\"f32\"",
           "Element type the f32 gradient buckets are communicated in: "
           "f32, or bf16 / f16 (half the bytes; cast before the "
           "all_reduce or reduce_scatter, back to f32 after)">,
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
  let summary = "Recompute activations in the backward pass instead of keeping them";
  let description = [{
    In a gradient function (`@<func>_grad`, built by tg-autodiff), an
    activation is a forward value that backward ops read, so it stays live
    from the forward pass to its last backward use. This pass lets the
    backward pass recompute chosen activations right before their first
    backward use, from values that are kept anyway (arguments, constants
    and activations that are not recomputed), so the originals die at the
    end of the forward pass.

    The choice is cost-driven (a lazy greedy over the real graph): the
    activation whose replay costs the fewest FLOPs per byte it frees goes
    first, its cost re-evaluated when it comes up because earlier choices
    lengthen chains (or leave a replay to reuse). Replays are chains of at
    most `max-depth` ops back to kept values; an activation is taken while
    its replay costs at most `max-flops-per-byte`, until `target-bytes`
    are freed (0: no target). With `matmuls`, chains may include matmuls
    and convolutions: attention scores (2 * head_dim FLOPs per element) are
    then replayed long before a projection's output (2 * d_model per
    element), which stays stored; elementwise work around it is replayed.

    With `widening-casts` (mixed precision), every widening `tg.cast` of
    tg-assign-precision (it carries `tg.precision`: the fp32 operand of a
    layer_norm or cross_entropy) that the backward pass reads is replayed
    first, whatever its cost ratio: the backward pass then keeps the bf16
    value, half the bytes, and casts it again, one FLOP per element for
    bit-identical values. With `max-depth=0` that is all the pass does.

    With `elementwise`, a replay is a chain of elementwise ops, reshapes
    and transposes only (no matmul, reduction, slice or concatenation), a
    transpose only where it writes the replayed value itself (or what
    reshapes, which tg-plan-memory makes views, turn into it), and it is
    taken only when every kept value it reads has a backward reader after
    the replay's place, so the replay extends no lifetime: what it frees is
    a pure saving. The training pipeline runs it after decomposition on a
    fused step (a GELU's output from its kept input, a layer norm's
    `xh s + b` from its kept normalised input, the attention output's
    `[B, T, D]` transpose from the `[B, H, T, hd]` output its backward
    keeps), where the elementwise chain becomes one kernel and its
    intermediates get no buffer, and a transpose's buffer lives only from
    the replay to its reader instead of across the step; the record then
    adds to the one of an earlier run.

    Recomputed dropout reads the same seed operand and has the same
    `stream`, so it draws the same mask and results are unchanged. Each
    recomputed op is marked `tg.recomputed`; the function gets
    `tg.remat = #tg.remat<bytes = N, flops = M>`. Run it after CSE, which
    would merge a recomputation back into its original.

    ```mlir
    // --tg-rematerialize: the GELU output is not kept for the weight
    // gradient; it is replayed from the kept matmul result.
    %r = tg.gelu %h {tg.recomputed} : tensor<4x8xf32>
    %gw = tg.matmul %r, %dy {transpose_lhs} : ...
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    Option<"funcName", "func", "std::string", "\"forward_grad\"",
           "Name of the gradient function">,
    Option<"maxDepth", "max-depth", "unsigned", "2",
           "Longest chain of ops recomputed for one activation">,
    Option<"maxFlopsPerByte", "max-flops-per-byte", "double", "4.0",
           "Most recomputation FLOPs accepted per byte freed">,
    Option<"recomputeMatmuls", "matmuls", "bool", "false",
           "Let replays include matmuls and convolutions">,
    Option<"targetBytes", "target-bytes", "int64_t", "0",
           "Stop once this many activation bytes are freed (0: no target)">,
    Option<"wideningCasts", "widening-casts", "bool", "false",
           "First replay every widening tg.cast of tg-assign-precision "
           "(bf16/f16 to f32) that the backward pass reads, from its narrow "
           "input">,
    Option<"elementwiseOnly", "elementwise", "bool", "false",
           "Replay only elementwise ops, and only where every kept value a "
           "replay reads is read again by the backward pass after it (the "
           "replay extends no lifetime): free replays for a fused step, "
           "whose chain runs as one kernel">,
  ];
}

def FitBudgetPass : Pass<"tg-fit-budget", "::mlir::ModuleOp"> {
  let summary = "Fit the training step into a memory budget and record how";
  let description = [{
    Runs on a model module (before tg-build-train-step) and builds its
    training step with the cheapest means that brings the planned peak of
    `@train_step` within `budget` bytes (0: the train block's
    `memory_budget`). Candidates, in order of extra cost:

    1. nothing;
    2. with `ranks` > 1 (and `zero` 0, `shard` on): the optimizer state
       sharded over the ranks (ZeRO stage 1, tg-data-parallel's `zero =
       1`), which communicates the bytes of the all_reduce it replaces and
       recomputes nothing; every later candidate is then sharded too;
    3. rematerialisation levels (tg-rematerialize), each a prefix of the
       same cost order: 1 = chains of two cheap ops (4 FLOPs per byte);
       2 = replays up to 64 FLOPs per byte, matmuls included (attention
       scores, normalisations, elementwise work); 3 = up to 1024 FLOPs per
       byte; 4 = everything that can be replayed;

    Micro-batching and lower precision come after the whole ladder, in
    that order: micro-batching changes the model's batch, which only the
    frontend can re-type, so the driver (tgc) recompiles with a smaller
    batch and runs this pass again, passing the split as `micro-batches`
    to be recorded, and then does the same with `precision = bf16`.

    The choice is recorded on the module as `tg.budget_fit =
    #tg.budget_fit<...>` (choice, level, micro_batches, zero, precision, budget,
    peak, unconstrained peak, extra and step FLOPs, fits). If nothing fits,
    the least peak is kept; with `must-fit` that is an error.
  }];
  let dependentDialects = ["::mlir::tg::TGDialect", "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let options = [
    Option<"funcName", "func", "std::string", "\"forward\"",
           "The model's forward function">,
    Option<"budget", "budget", "int64_t", "0",
           "Bytes the planned peak may reach (0: the train block's memory_budget)">,
    Option<"precision", "precision", "std::string", "\"\"",
           "fp32, bf16 or fp16 instead of the train block's (empty: the train block's)">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "How many micro-batches the driver split the batch into (recorded)">,
    Option<"decompose", "decompose", "bool", "true",
           "Decompose composite ops before planning (as tgc does)">,
    Option<"keepAttention", "keep-attention", "bool", "false",
           "With decompose: leave tg.attention and tg.attention_grad whole "
           "(as tgc does for GPU targets)">,
    Option<"mustFit", "must-fit", "bool", "true",
           "Fail if no candidate fits (otherwise keep the least peak)">,
    Option<"ranks", "ranks", "int64_t", "1",
           "Data-parallel ranks of every candidate (tg-data-parallel), so "
           "the kept step is the one the job runs">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25 * 1024 * 1024",
           "Bytes of gradients per all_reduce of the candidates">,
    Option<"zero", "zero", "int64_t", "0",
           "ZeRO stage of the candidates (1: optimizer state sharded over "
           "the ranks)">,
    Option<"shard", "shard", "bool", "true",
           "With ranks > 1 and zero = 0: may shard the optimizer state "
           "(ZeRO stage 1) to fit, before recomputing">,
    Option<"keepCollectives", "keep-collectives", "bool", "false",
           "With ranks = 1: the candidates keep their collectives "
           "(tg-data-parallel's keep-collectives)">,
    Option<"commDtype", "comm-dtype", "std::string", "\"f32\"",
           "Element type of the candidates' gradient buckets "
           "(tg-data-parallel's comm-dtype)">,
  ];
}

def FusePass : Pass<"tg-fuse", "::mlir::ModuleOp"> {
  let summary = "Group ops into kernels (tg.fused regions) by a bytes/FLOPs cost model";
  let description = [{
    Every block of every function (and of its loops) is partitioned into
    kernels, each a `tg.fused` region of one kind (docs/fusion.md):

    - `gemm`: a matmul with its epilogue (scale, bias or residual add,
      relu/gelu/silu/sigmoid/tanh, cast) on the product's shape; transposes
      of the last two dimensions that feed only matmuls first fold into the
      matmul's `transpose_lhs`/`transpose_rhs`.
    - `elementwise`: connected elementwise ops and broadcasts writing one
      shape; a value also needed outside is one more result.
    - `row_reduction`: reductions over the same trailing axes of one shape
      (softmax, norms, cross-entropy and their backward) with the
      elementwise ops on its rows and reduced rows.
    - `reduction`: reductions over other axes (bias gradients) with their
      elementwise prologue.
    - `optimizer`: in a function returning new parameters or optimizer
      state (`@train_step`), every elementwise op computing them, as one
      multi-tensor update.

    Ops merge producer into consumer in program order when the merged group
    is legal for its kind, keeps bytes out of memory (the cost model: each
    value consumed inside is not read back, and not written when nothing
    outside reads it) and creates no cycle. Each group records
    `tg.flops`, `tg.bytes_read` and `tg.bytes_written`. Single ops stay as
    they are.

    ```mlir
    %m = tg.matmul %x, %w : ...
    %y = tg.relu %m : ...
    // becomes
    %y = tg.fused <gemm> ins(%x, %w : ...) {tg.flops = ..., ...} {
    ^bb0(%a: ..., %b: ...):
      %0 = tg.matmul %a, %b : ...
      %1 = tg.relu %0 : ...
      tg.yield %1 : ...
    } -> ...
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    Option<"optimizerGroup", "optimizer-group", "bool", "true",
           "Group the parameter update of every parameter into one kernel">,
  ];
}

def InlineFusedPass : Pass<"tg-inline-fused"> {
  let summary = "Replace every tg.fused group by the ops of its body";
  let description = [{
    For a backend that runs the ops of a fusion group one by one (the CPU
    backend today): each `tg.fused` becomes its body, with the group's
    operands for its block arguments. The memory plan of each group result
    (`tg.offsets`/`tg.offset`, `tg.alias_args`/`tg.alias_arg`) moves to the
    op that computes it, so the plan stays valid; the group's internal
    values get no planned slot, and the backend places them itself.
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

#endif // TG_PASSES_TD
