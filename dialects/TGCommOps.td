//===- TGCommOps.td - tg communication ops -----------------*- tablegen -*-===//
//
// The ops of a data-parallel step that communicate between ranks
// (docs/data-parallel.md): the communicator and the collectives over it.
// Included by TGOps.td, in whose generated op list they are.
//
//===----------------------------------------------------------------------===//

#ifndef TG_COMM_OPS_TD
#define TG_COMM_OPS_TD

include "dialects/TGTypes.td"

def TG_CommWorldOp : TG_Op<"comm_world", [Pure]> {
  let summary = "the communicator of every rank of the job";
  let description = [{
    The group of all `ranks` processes of a data-parallel job, the one
    every collective of `tg-data-parallel` runs over. Its size is its
    type's: a job must have exactly that many ranks (the runtime checks).
    The backends pass it to the runtime as communicator id 0 (the world:
    tg-run's MPI_COMM_WORLD, the CUDA device's NCCL communicator).

    ```mlir
    %world = tg.comm_world : !tg.comm<ranks = 2>
    ```
  }];
  let results = (outs TG_CommType:$comm);
  let assemblyFormat = "attr-dict `:` qualified(type($comm))";
}

// What every communicating collective shares: the communicator and, once
// tg-plan-memory has planned it, the arena offset of the flat buffer the
// CPU backend packs the bucket into (tg-plan-memory; the GPU backend
// communicates the planned tensors themselves and plans none).
class TG_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : TG_Op<mnemonic, traits> {
  let extraClassDeclaration = [{
    /// The number of ranks of the communicator this collective runs over.
    int64_t getRanks() { return getComm().getType().getRanks(); }
  }];
}

def TG_AllReduceOp : TG_CollectiveOp<"all_reduce", [InferTypeOpAdaptor]> {
  let summary = "sum or mean of a bucket of tensors over every rank";
  let description = [{
    Every rank of the communicator `comm` (of `ranks` processes)
    contributes its operands; every rank receives, per operand, their
    elementwise sum (`op = "sum"`) or mean (`op = "mean"`). The operands
    form one bucket: a backend sends them as one message. The op
    communicates, so it has side effects: it is never removed, merged or
    reordered with another collective. On one process (the reference
    evaluator, a job of one rank) every rank holds the same value, so the
    mean is the identity and the sum multiplies by `ranks`.
    `bucket_offset` (tg-plan-memory) is where in the arena the CPU
    backend packs the bucket.

    ```mlir
    %g:2 = tg.all_reduce %gw, %gb on %world {op = "mean"} : !tg.comm<ranks = 2>, tensor<784x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins TG_CommType:$comm, Variadic<TG_FloatTensor>:$inputs,
                       StrAttr:$op, OptionalAttr<I64Attr>:$bucket_offset);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat =
      "$inputs `on` $comm attr-dict `:` qualified(type($comm)) `,` type($inputs)";
  let hasVerifier = 1;
}

def TG_ReduceScatterOp : TG_CollectiveOp<"reduce_scatter", []> {
  let summary = "sum or mean of a bucket over every rank, each rank keeping its shard";
  let description = [{
    ZeRO stage 1's gradient exchange. Every rank of `comm` contributes its
    operands; rank `r` receives, per operand, shard `r` of their
    elementwise sum (`op = "sum"`) or mean (`op = "mean"`) over the ranks.
    An operand of `n` elements is read as a flat vector padded with zeros
    to `ranks * s` elements, `s = ceil(n / ranks)`; shard `r` is elements
    `[r * s, (r + 1) * s)` of it, a `tensor<s x T>` (the padding of the
    last shards holds zeros). The operands form one bucket: a backend sends
    them as one message. It communicates, so it has side effects. On one
    process (the reference evaluator) every rank holds the same values and
    the process is rank 0: the result is shard 0 of the operand (times
    `ranks` for a sum). `bucket_offset` as for `tg.all_reduce`.

    ```mlir
    %s:2 = tg.reduce_scatter %gw, %gb on %world {op = "mean"} : !tg.comm<ranks = 2>, tensor<784x256xf32>, tensor<255xf32> -> tensor<100352xf32>, tensor<128xf32>
    // rank 1's %s#1 ends with one zero of padding
    ```
  }];
  let arguments = (ins TG_CommType:$comm, Variadic<TG_FloatTensor>:$inputs,
                       StrAttr:$op, OptionalAttr<I64Attr>:$bucket_offset);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat = "$inputs `on` $comm attr-dict `:` qualified(type($comm)) "
                       "`,` type($inputs) `->` type($results)";
  let hasVerifier = 1;
}

def TG_AllGatherOp : TG_CollectiveOp<"all_gather", []> {
  let summary = "every rank's shard of a bucket of tensors, gathered on every rank";
  let description = [{
    The inverse of `tg.reduce_scatter`'s sharding: each operand is this
    rank's flat shard (`tensor<s x T>`) of the result (`n` elements,
    `s = ceil(n / ranks)`, `ranks` the communicator's); every rank
    receives the concatenation of the shards of all ranks, in rank order,
    without the padding, in the result's shape. ZeRO stage 1 gathers the
    parameters each rank updated this way. It communicates, so it has side
    effects. On one process every rank holds the same shard: the result
    repeats the operand. `bucket_offset` as for `tg.all_reduce`.

    ```mlir
    %w:2 = tg.all_gather %sw, %sb on %world : !tg.comm<ranks = 2>, tensor<100352xf32>, tensor<128xf32> -> tensor<784x256xf32>, tensor<255xf32>
    ```
  }];
  let arguments = (ins TG_CommType:$comm, Variadic<TG_FloatTensor>:$inputs,
                       OptionalAttr<I64Attr>:$bucket_offset);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat = "$inputs `on` $comm attr-dict `:` qualified(type($comm)) "
                       "`,` type($inputs) `->` type($results)";
  let hasVerifier = 1;
}

def TG_ShardOp : TG_CollectiveOp<"shard", [Pure]> {
  let summary = "this rank's flat shard of a tensor every rank holds";
  let description = [{
    Rank `r` of the communicator `comm` (of `ranks` processes) gets
    elements `[r * s, (r + 1) * s)` of the operand read as a flat vector
    padded with zeros to `ranks * s` elements, `s = ceil(n / ranks)`: the
    same sharding as `tg.reduce_scatter`. It does not communicate (every
    rank holds the operand), but its result depends on the rank within
    `comm`; ZeRO stage 1 takes the parameter shard a rank updates this
    way. On one process (the reference evaluator) the rank is 0.

    ```mlir
    %s = tg.shard %w on %world : !tg.comm<ranks = 2>, tensor<255xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins TG_CommType:$comm, TG_FloatTensor:$input);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `on` $comm attr-dict `:` qualified(type($comm)) "
                       "`,` type($input) `->` type($result)";
  let hasVerifier = 1;
}

#endif // TG_COMM_OPS_TD
