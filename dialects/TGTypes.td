//===- TGTypes.td - tg types -------------------------------*- tablegen -*-===//
//
// The types of the tg dialect beside the builtin tensors its ops compute
// on: the communicator that the collectives of a data-parallel step run
// over (docs/data-parallel.md).
//
//===----------------------------------------------------------------------===//

#ifndef TG_TYPES_TD
#define TG_TYPES_TD

include "dialects/TGDialect.td"
include "mlir/IR/AttrTypeBase.td"

def TG_CommType : TypeDef<TG_Dialect, "Comm"> {
  let mnemonic = "comm";
  let summary = "a communicator: the group of ranks a collective runs over";
  let description = [{
    A value of this type names a group of `ranks` processes that run the
    same step; `tg.all_reduce`, `tg.reduce_scatter`, `tg.all_gather` and
    `tg.shard` take one as their first operand, and their shard sizes
    follow from its rank count. `tg.comm_world` makes the communicator of
    every rank of the job (MPI_COMM_WORLD, the job's NCCL communicator);
    the backends pass it on as a communicator id (0: the world) that the
    runtime maps to the communicator it installed, so that a later op
    splitting the world into groups (tensor parallelism) needs no new
    calling convention.

    ```mlir
    %world = tg.comm_world : !tg.comm<ranks = 2>
    ```
  }];
  let parameters = (ins "int64_t":$ranks);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // TG_TYPES_TD
