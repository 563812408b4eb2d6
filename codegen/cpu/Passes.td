//===- Passes.td - CPU code generation passes --------------*- tablegen -*-===//
//
// The passes of codegen/cpu. The whole lowering to the LLVM dialect is the
// pipeline tg-cpu-pipeline (Pipeline.cpp), built from upstream passes around
// the one conversion declared here.
//
//===----------------------------------------------------------------------===//

#ifndef TG_CPU_PASSES_TD
#define TG_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTGToLinalgPass : Pass<"tg-convert-to-linalg"> {
  let summary = "Lower every tg op to linalg, tensor, arith and math on tensors";
  let description = [{
    First decomposes the composite ops (softmax, log_softmax, gelu, silu,
    sigmoid, layer_norm, rms_norm, cross_entropy, mse_loss; not attention) with
    `populateDecomposeCompositesPatterns`, then converts each remaining tg op
    into value-semantics ops that one-shot bufferization understands:

    - elementwise ops with NumPy broadcasting, cmp, select, cast, one_hot,
      causal_mask, broadcast_to: one parallel `linalg.generic` whose
      indexing maps encode the broadcast (size-1 dimensions read index 0);
    - matmul (transposes and batch broadcasting in the maps), sum, mean,
      max: `linalg.generic` with reduction iterators over a `linalg.fill`;
    - reshape, transpose, slice, concat: `tensor.collapse_shape` /
      `expand_shape`, `linalg.transpose`, `tensor.extract_slice`,
      `tensor.insert_slice`;
    - embedding: a gather (`tensor.extract` in a generic); embedding_grad: a
      scatter-add in `scf.for` loops;
    - dropout, random: Philox-4x32-10 in `arith` (`arith.mului_extended`),
      the mapping of `include/tgc/Philox.h`;
    - conv2d and pooling: direct `linalg.generic` loop nests over padded
      inputs; their backward ops gather from the cotangent.
    - all_reduce: one call of the artifact's `tgx_all_reduce_f32` on a
      flat buffer holding the bucket (CommToCalls.cpp).
    - attention, attention_grad: kept whole (not decomposed), as
      FlashAttention-2 loop nests: `scf.for` over (batch, head) and blocks
      of 64 queries and keys, static tiles, online softmax; no `Tq x Tk`
      tensor (AttentionToLoops.cpp).

    bf16 and f16 values are computed in f32 inside each op and rounded once
    at its result, the rounding the reference evaluator models. An op or type
    this pass cannot lower is reported at the op's location.

    A `tg.fused` group (tg-fuse) has its body converted in place, then its
    linalg ops fused producer into consumer (upstream's elementwise fusion,
    confined to the group) and the body inlined: an elementwise group is
    one `linalg.generic` with one output per group result, a GEMM's
    epilogue one generic after the contraction, a row reduction's
    elementwise ops folded into its reductions. With `fuse-groups=false`
    each group is inlined first and every op is its own loop nest.

    ```mlir
    %r = tg.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    // becomes
    %e = tensor.empty() : tensor<4x3xf32>
    %r = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1),
                                          (d0, d1) -> (d0, d1)], ...}
           ins(%a, %b : ...) outs(%e : ...) { arith.addf ... }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::func::FuncDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::LLVM::LLVMDialect"
  ];
  let options = [
    Option<"fuseGroups", "fuse-groups", "bool", "true",
           "Each tg.fused group as few loop nests as linalg fusion allows">,
  ];
}

def BindArenaPass : Pass<"tg-bind-arena", "::mlir::ModuleOp"> {
  let summary = "Place every planned value in one arena argument";
  let description = [{
    For every function that tg-plan-memory planned (it carries `tg.memory`),
    appends an argument `memref<N x i8>`, N = the plan's `transient_bytes`,
    and materialises each value with a `tg.offset` in its slice of it
    (`memref.view` + `bufferization.to_tensor restrict writable` +
    `bufferization.materialize_in_destination`). Values with
    `tg.alias_arg = k` are materialised in argument k, which becomes
    writable; a multi-result op (a `tg.fused` group) binds each result by
    its entry of `tg.offsets` / `tg.alias_args` (-1: none); the accumulation loop's carried values live in their results'
    slots. Run before tg-convert-to-linalg; empty-tensor elimination then
    makes producers write in place. See docs/memory.md.

    ```mlir
    %x = tg.exp %a {tg.offset = 256 : i64} : ...
    // becomes
    %v = memref.view %arena[%c256][] : memref<1024xi8> to memref<4xf32>
    %d = bufferization.to_tensor %v restrict writable : ...
    %x = tg.exp %a {tg.offset = 256 : i64} : ...
    %r = bufferization.materialize_in_destination %x in %d : ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def SizeScratchPass : Pass<"tg-size-scratch", "::mlir::ModuleOp"> {
  let summary = "Record each op's CPU scratch bytes as tg.scratch";
  let description = [{
    Runs on tg ops, before tg-plan-memory. Every tg op with tensor results
    (a `tg.fused` group as one) is lowered alone, in a function of its own
    that is planned like the step (its operands arguments, constants
    cloned, its results planned values), through tg-cpu-pipeline as far as
    tg-plan-scratch; equal ops (the same printed kernel) are lowered once.
    What that lowering still allocates besides the planned values is the
    op's scratch: the f32 accumulator of a bf16 contraction, a
    convolution's padded input, a pooling gradient's argmax values, a
    row-tiled group's row temporaries, attention's block buffers, the fill
    of a splat operand. Its size (as tg-plan-scratch packs it, 256-byte
    aligned) becomes the op's `tg.scratch`, which tg-plan-memory plans as a
    buffer live at the op's moment. An op whose lowering leaves an
    allocation its own plan cannot place gets no `tg.scratch`: its scratch
    stays after the plan's region, where tg-plan-scratch appends it.

    ```mlir
    %y = tg.max_pool2d_grad %dy, %x ... : ... -> tensor<8x6x28x28xf32>
    // becomes
    %y = tg.max_pool2d_grad %dy, %x ... {tg.scratch = 150528 : i64} : ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def PlanScratchPass : Pass<"tg-plan-scratch", "::mlir::ModuleOp"> {
  let summary = "Place the buffers ops still allocate in the arena";
  let description = [{
    Runs after bufferization on functions with an arena argument (from
    tg-bind-arena). Each remaining static `memref.alloc` is scratch of one
    op's lowering (a padded input, argmax indices, an f32 accumulator).
    Where the op had a `tg.scratch_offset` (tg-plan-memory placed its
    `tg.scratch` bytes in the plan; tg-bind-arena carries offset and bytes
    to its lowering in the location of every op it becomes), its buffers
    are packed by lifetime (best fit, 256-byte aligned) into those bytes at
    that offset of the arena. The others, and an op's buffers that do not
    fit its `tg.scratch`, are packed likewise into a region appended to the
    arena, which grows accordingly. Each allocation becomes a
    `memref.view` of the arena, and the module attribute `tg.arena_bytes`
    records every function's arena size. Buffers that escape (returned,
    yielded, passed to a call) stay allocations.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"
  ];
}

def InlineSplatOperandsPass
    : Pass<"tg-inline-splat-operands", "::mlir::ModuleOp"> {
  let summary = "Read splat constant operands of linalg.generic as scalars";
  let description = [{
    Runs on tensors, after `tg-convert-to-linalg` and canonicalization,
    before bufferization. Every input of a `linalg.generic` that is a splat
    constant tensor (a rank-0 `dense<0.0> : tensor<f32>` that `relu` and its
    gradient compare with, a learning rate, a loss scale) becomes an
    `arith.constant` scalar inside the body, and the operand is dropped.
    Every element of a splat is the same, so the op computes exactly what it
    did, bit for bit.

    Why: canonicalization uniques constants, so one splat tensor is read by
    every op of its kind in the step (a chain of N `relu`s: 2N reads of
    `dense<0.0>`). Upstream's empty-tensor elimination, one-shot analysis
    and deallocation simplification visit all uses of a value they query,
    so that one value made each of them quadratic in the step's length
    (`--no-fuse` relu chain, 500 / 1000 ops: 5.9 / 21.5 s CPU for the
    pipeline, each of the three about 4.5x per doubling). A scalar in the
    body is no tensor and no buffer, so none of them sees it.

    ```mlir
    %c = arith.constant dense<0.000000e+00> : tensor<f32>
    %r = linalg.generic {indexing_maps = [#id, affine_map<(d0) -> ()>, #id], ...}
        ins(%x, %c : tensor<8xf32>, tensor<f32>) outs(%e : tensor<8xf32>) {
    ^bb0(%in: f32, %zero: f32, %out: f32):
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    } -> tensor<8xf32>
    // becomes
    %r = linalg.generic {indexing_maps = [#id, #id], ...}
        ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %m = arith.maximumf %in, %zero : f32
      linalg.yield %m : f32
    } -> tensor<8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def MarkEntryPointsPass : Pass<"tg-mark-entry-points", "::mlir::ModuleOp"> {
  let summary = "Give the entry points a C interface and read-only arguments";
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
  let description = [{
    Sets `llvm.emit_c_interface` on the named functions (every public
    function when `functions` is empty), so that the LLVM lowering adds
    `_mlir_ciface_<name>` wrappers taking memref descriptors by pointer: the
    ABI the JIT and the runtime call (see docs/cpu-backend.md). Marks every
    tensor argument `bufferization.writable = false`, so that the code never
    writes a caller's buffer (a runtime may feed one batch to many steps).
    Also drops
    the `tg.*` argument and result attributes of every function: they
    describe the model (names, roles, initialisers) and would otherwise move
    onto out-parameters when results become arguments.
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "Functions to mark (default: every public function)">,
  ];
}

def ConvertMatmulToBlasPass
    : Pass<"tg-convert-matmul-to-blas", "::mlir::ModuleOp"> {
  let summary = "Call cblas_sgemm for f32 matrix products on buffers";
  let description = [{
    Runs after bufferization. Every `linalg.generic` on f32 memrefs that is a
    plain 2-D contraction (`out[m, n] += lhs[m|k, k|m] * rhs[k|n, n|k]`,
    contiguous rows, any row stride) with at least `min-size` multiply-adds
    becomes a call to `cblas_sgemm` (row-major, beta = 1, so the preceding
    zero fill is kept), which OpenBLAS runs on every core. The module then
    needs OpenBLAS (`libopenblas.so.0`) at link or load time; the JIT loads
    it. Whether it pays is measured by bench/cpu_jit_mlp.sh (see
    docs/cpu-backend.md); tg-cpu-pipeline runs it with `blas=true`.

    ```mlir
    linalg.generic {indexing_maps = [(m, k, n) -> (m, k), (m, k, n) -> (k, n),
                                     (m, k, n) -> (m, n)], ...}
        ins(%a, %b : memref<128x784xf32>, memref<784x256xf32>) outs(%c : ...)
    // becomes
    func.call @cblas_sgemm(%row_major, %no_trans, %no_trans, %m, %n, %k,
                           %one, %pa, %lda, %pb, %ldb, %one, %pc, %ldc)
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect"
  ];
  let options = [
    Option<"minSize", "min-size", "int64_t", "32768",
           "Smallest M * N * K that is worth a library call">,
  ];
}

def VectorizeContractionsPass
    : Pass<"tg-vectorize-contractions", "::mlir::ModuleOp"> {
  let summary = "Register-blocked vector GEMM kernels for f32 contractions on buffers";
  let description = [{
    Runs after bufferization (and outlining), before linalg becomes loops.
    Every `linalg.generic` on static f32 memrefs whose body is
    `out + x * y` with `reassoc` (the matmul lowering, 2-D or batched, and
    the im2col products of the convolutions) and that has one contraction
    dimension becomes a cache-blocked loop nest around a register-blocked
    micro-kernel of `vector.fma` on `vector<16xf32>`:

    - rhs and result contiguous along n (nn, tn): an outer-product kernel,
      6 x 32 results in registers over blocks of 256 steps of k, one rhs
      row loaded and 6 lhs elements broadcast per step; every result is
      summed in k order, as the scalar loops did;
    - both operands contiguous along k (nt): a dot-product kernel, 4 x 4
      results as 16-lane partial sums over the whole of k, reduced at the
      end (a reassociated sum).

    Tiles at the edges have fewer rows, fewer columns (masked loads and
    stores) or a masked last step of k. Batch dimensions and further m or
    n dimensions are outer loops. Both operands transposed, dynamic shapes
    or other element types keep their scalar loops. The code allocates
    nothing (no packing buffer).

    ```mlir
    linalg.generic {indexing_maps = [(m, k, n) -> (m, k), (m, k, n) -> (k, n),
                                     (m, k, n) -> (m, n)], ...}
        ins(%a, %b : memref<64x32xf32>, memref<32x48xf32>) outs(%c : ...)
    // becomes
    scf.for %m0 = %c0 to %c60 step %c6 {
      scf.for %n0 = %c0 to %c32 step %c32 {
        %acc = vector.load %c[%m0, %n0] : memref<64x48xf32>, vector<16xf32>
        ...
        scf.for %k = %c0 to %c32 step %c1 iter_args(...) {
          %b0 = vector.load %b[%k, %n0] ...
          %a0 = memref.load %a[%m0, %k] ...
          %s = vector.broadcast %a0 : f32 to vector<16xf32>
          %f = vector.fma %s, %b0, %acc ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def SelectVectorWidthsPass
    : Pass<"tg-select-vector-widths", "::mlir::ModuleOp"> {
  let summary = "Choose the vector width of each elementwise or row loop nest on buffers";
  let description = [{
    The configuration half of the elementwise vectorisation (the lowering is
    `tg-vectorize-elementwise`). Runs after bufferization, outlining and
    `tg-vectorize-contractions`. Every `linalg.generic` on static buffers
    that `tg-vectorize-elementwise` can vectorise along its innermost loop
    gets `tg_cpu.vector_width`: the lanes of one vector along that loop.

    - A generic qualifies when its body is made of elementwise-mappable
      `arith`/`math` ops, constants and `linalg.index` only; every operand
      that the innermost loop indexes has it as its last, unit-stride
      dimension (the others are read once per vector and broadcast); its
      buffers have byte-sized elements (not `i1`, whose vectors LLVM packs
      into bits); and, where the innermost loop is a reduction, each result
      is `combine(acc, x)` of one op without `reassoc` (sum, max, ...), so
      `x` is computed lanes at a time and combined in the original order.
    - The width: `lanes` (f32 lanes of a vector register: 8 with AVX2, 16
      with AVX-512; tg-cpu-pipeline passes the host's) scaled down for 64-bit
      elements in the body, and never above the innermost extent rounded up
      to a power of two (a row of 4 gets 4 lanes, not a masked 8). Extents
      of 1 are not vectorised.

    ```mlir
    linalg.generic {...} ins(%x : memref<8x100xf32>) outs(%y : memref<8x100xf32>) {
    ^bb0(%a: f32, %b: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    }
    // gets
    linalg.generic {..., tg_cpu.vector_width = 8 : i64} ...
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", "8",
           "f32 lanes of one vector register of the target (8: AVX2, 16: AVX-512)">,
  ];
}

def VectorizeElementwisePass
    : Pass<"tg-vectorize-elementwise", "::mlir::ModuleOp"> {
  let summary = "Vector loop nests for the generics tg-select-vector-widths chose";
  let description = [{
    Every `linalg.generic` with `tg_cpu.vector_width = W` becomes a loop
    nest whose innermost loop steps W elements at a time: operands indexed
    by that loop are read with `vector.load`, the others once per vector and
    broadcast; the body's scalar ops are cloned on `vector<W x T>`; results
    are written with `vector.store`. The last `n mod W` elements use the
    same code with masked loads and stores, so no shape falls back to
    scalar code. Where the innermost loop is a reduction, each result's
    combining op (`acc + x`, `max(acc, x)`) is applied lane by lane, in
    order, to the vector of `x`: the expensive part (exp, tanh, ...) runs W
    lanes at a time and every sum is the same, bit for bit, as in the
    scalar loops. Loops are in the generic's order, so every element is
    computed by the same ops in the same order as before.

    A generic whose attribute it cannot honour is an error (the attribute
    is a promise of tg-select-vector-widths).

    ```mlir
    linalg.generic {..., tg_cpu.vector_width = 8 : i64}
        ins(%x : memref<100xf32>) outs(%y : memref<100xf32>) {...math.tanh...}
    // becomes
    scf.for %i = %c0 to %c96 step %c8 {
      %v = vector.load %x[%i] : memref<100xf32>, vector<8xf32>
      %t = math.tanh %v : vector<8xf32>
      vector.store %t, %y[%i] : memref<100xf32>, vector<8xf32>
    }
    %m = vector.constant_mask [4] : vector<8xi1>
    %v = vector.maskedload %x[%c96], %m, %zero ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def ApproximateMathPass : Pass<"tg-approximate-math"> {
  let summary = "Inline polynomial approximations of f32 tanh, exp, log and erf";
  let description = [{
    Replaces f32 `math` ops (scalars and vectors) by upstream's polynomial
    approximations (mlir/Dialect/Math/Transforms), built of arith/math ops
    that vectorise, instead of calls to libm (`tanhf`, `expf`, ...), which
    LLVM can only call one lane at a time. Only functions whose
    approximation stays within a few ulp of the exact result on a dense
    sweep of all f32 inputs are on the default list: `tanh` (4 ulp), `exp`
    (1 ulp, 5 next to overflow; results below 2^-126 flushed to 0), `log`
    (1 ulp; subnormal arguments are scaled by 2^24 first, which upstream's
    pattern would raise to 2^-126), `erf` (4 ulp); test/cpu/MathApproxTest.cpp
    prints and bounds the error. f64 ops and the other functions (sin, cos:
    large arguments) keep libm.

    ```mlir
    %t = math.tanh %x : vector<8xf32>
    // becomes arith/math ops on vector<8xf32> (a rational polynomial,
    // clamped, with the sign restored); no call to tanhf
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "math ops to approximate, by mnemonic (default: tanh, exp, log, erf)">,
  ];
}

def OutlineKernelsPass : Pass<"tg-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Move each linalg op on buffers, or marked loop nest, into a kernel function, one per kind";
  let description = [{
    Runs after bufferization and deallocation, before linalg becomes loops.
    Every `linalg` op on memrefs moves into a private function of its own
    (`tg_kernel_<k>`, LLVM `noinline`) that takes the op's buffers and the
    non-constant values its body reads; the op's place gets a `func.call`.
    Constants the op reads are cloned into the kernel. Two ops that outline
    to the same function (same op, shapes, layouts, attributes and body) share
    one kernel, so a chain of 1000 `relu`s of one shape is one kernel called
    1000 times.

    A loop nest marked `tg_cpu.kernel` (the row loop of a row-reduction
    group, which tg-convert-to-linalg makes one loop over the rows running
    the group's loop nests on each row) moves whole, with the linalg ops in
    it, into one kernel: the group costs one call, not one call per op per
    row (a softmax over 1024 rows: 1 call instead of 4,096). A marked nest
    that returns values or works on tensors is not moved; its linalg ops on
    buffers are outlined one by one.

    Why: a training step is one function of thousands of sequential ops. The
    lowering after this point (scf to cf splits the block once per loop and
    moves the rest of it; LLVM's register allocation and analyses) costs
    time quadratic in that function's length (1000 chained relus at -O0:
    150 s, 2 GB). Outlined, each kernel is small, the step is a straight
    list of calls, and code size grows with the number of distinct ops.

    ```mlir
    linalg.generic {...} ins(%a : memref<16x64xf32>) outs(%b : memref<16x64xf32>) {...}
    // becomes
    func.call @tg_kernel_0(%a, %b) : (memref<16x64xf32>, memref<16x64xf32>) -> ()
    func.func private @tg_kernel_0(%arg0: memref<16x64xf32>, %arg1: memref<16x64xf32>)
        attributes {passthrough = ["noinline"]} {
      linalg.generic {...} ins(%arg0 : ...) outs(%arg1 : ...) {...}
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def DeallocateBuffersPass : Pass<"tg-deallocate-buffers", "::mlir::ModuleOp"> {
  let summary = "Free the intermediate buffers of the functions that allocate";
  let description = [{
    Runs upstream's `buffer-deallocation-pipeline` (ownership-based
    deallocation, its simplification, the lowering of `bufferization.dealloc`
    and the canonicalizations between them) on the module, with every
    function that cannot need it set aside: a function that nothing in the
    module calls, that calls nothing and that has no op allocating memory
    (its buffers are its arguments and views of them: a step planned into
    its arena). The set-aside functions then get the pipeline's last two
    passes, CSE and canonicalization, alone: with the arena they merge equal
    views and erase the copies between them that became self-copies.

    Why: the pipeline is a handful of passes over the whole module, and the
    planned `train_step`, the longest function by far (GPT-2 small: 12
    layers forward and backward before kernels are outlined), allocates
    nothing once tg-plan-scratch has placed its scratch: the passes only
    walked it.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def PassBarePointersPass : Pass<"tg-pass-bare-pointers", "::mlir::ModuleOp"> {
  let summary = "Functions take each buffer of static layout as one pointer";
  let description = [{
    Runs on buffers, after the last pass that looks at function arguments
    as memrefs and before the lowering of memrefs to LLVM. Each argument of
    a function defined in the module that is a memref of static shape and
    static strides (any offset; integer, bf16, f16, f32 or f64 elements)
    becomes one `!llvm.ptr` to its first element: the function rebuilds the
    memref descriptor from the pointer and its type's constant sizes and
    strides (`builtin.unrealized_conversion_cast`, which the memref lowering
    resolves), and every `func.call` passes the aligned pointer advanced by
    the buffer's offset. Memrefs of dynamic shape or strides keep the
    descriptor.

    Only functions whose every use is a `func.call` are rewritten: private
    functions (the kernels, the micro-batch functions), and, with
    `entry-points`, the functions marked `llvm.emit_c_interface`, which then
    lose the mark: a caller outside the module calls them directly with one
    pointer per buffer (the artifact's `tgx_<entry>`, docs/artifact.md).

    Why: a memref descriptor is 3 + 2 x rank values (pointers, offset,
    sizes, strides), and after `tg-outline-kernels` the entry points are
    long lists of kernel calls: each buffer passed as a descriptor made the
    glue (the step, its C interface and the `tgx_` wrapper) about half of
    GPT-2 small's code and a large share of the lowering's and LLVM's time.

    ```mlir
    func.call @tg_kernel_0(%v) : (memref<64xf32, strided<[1], offset: ?>>) -> ()
    // becomes (in the caller)
    %d = builtin.unrealized_conversion_cast %v : memref<64xf32, strided<[1], offset: ?>> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
    %a = llvm.extractvalue %d[1] : !llvm.struct<...>
    %o = llvm.extractvalue %d[2] : !llvm.struct<...>
    %p = llvm.getelementptr %a[%o] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    func.call @tg_kernel_0(%p) : (!llvm.ptr) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"entryPoints", "entry-points", "bool", /*default=*/"false",
           "Also the functions marked llvm.emit_c_interface, which lose "
           "their C interface">,
  ];
}

def ParallelizeLoopsPass : Pass<"tg-parallelize-loops", "::mlir::ModuleOp"> {
  let summary = "Choose the loops that run on several threads, by their work";
  let description = [{
    Runs on buffers after the loop nests exist (`tg-vectorize-contractions`,
    `convert-linalg-to-parallel-loops`), before `convert-scf-to-openmp`.
    Every `scf.parallel` there is a loop whose iterations are independent
    (the parallel iterators of a linalg op, the row tiles of a GEMM kernel);
    this pass decides which of them are worth a fork and a join:

    - a loop is a candidate when it has no reductions (`init` values) and
      its body neither allocates, frees nor calls (the artifact's counted
      allocator is not thread-safe, a callee's effects are unknown), and no
      enclosing loop runs in parallel;
    - its parallel dimension is the outermost one of at least 8 iterations
      (else the one of most iterations); the others become `scf.for` loops
      around and inside it, so LLVM still vectorises the innermost loop;
    - it runs in parallel when that dimension has at least 2 iterations and
      the loop's estimated work (operations executed, nested loops
      multiplied out; a vector op counts once) is at least `min-work`: below
      that, a fork and join of the OpenMP runtime cost more than they save.

    A parallel dimension that is also the innermost loop is cut into chunks
    of 256 iterations (one iteration of the parallel loop each), so the
    split between vector body and scalar remainder does not depend on the
    thread count. Every loop that stays parallel is a one-dimensional
    `scf.parallel` carrying `tg_cpu.parallel = {iterations, work}` (the work of
    the whole loop); every other `scf.parallel` becomes a nest of `scf.for`.
    Iterations are independent and each is computed by the same code, so
    results do not depend on the number of threads.

    A convolution's slot loop (an `scf.for` over blocks of images marked
    `tg_cpu.slots`, whose iterations each have their own slot of the op's
    scratch from `tg-plan-scratch`) becomes such a `scf.parallel` too, one
    fork per convolution, where it is outside any loop, yields nothing and
    neither allocates, frees nor calls anything but the module's functions
    that do the same. Those calls are inlined (a parallel body that calls
    keeps an `alloca_scope` that `scf-to-cf` cannot lower), and the loops
    of the inlined kernels stay sequential.

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c1024, %c256) step (%c1, %c1) {
      ... elementwise body ...
    }
    // becomes
    scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
      scf.for %j = %c0 to %c256 step %c1 { ... }
    } {tg_cpu.parallel = {iterations = 1024 : i64, work = 1048576 : i64}}
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"
  ];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"65536",
           "Estimated operations a loop needs to run on several threads">
  ];
}

#endif // TG_CPU_PASSES_TD
