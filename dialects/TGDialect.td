//===- TGDialect.td - the tg dialect -----------------------*- tablegen -*-===//
//
// The dialect of training graphs: static-shaped tensor ops that TGC
// differentiates, plans and lowers.
//
//===----------------------------------------------------------------------===//

#ifndef TG_DIALECT_TD
#define TG_DIALECT_TD

include "mlir/IR/OpBase.td"

def TG_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::mlir::tg";
  let summary = "Training graphs: static-shaped tensor ops for TGC";
  let description = [{
    Values are builtin ranked tensors with static shapes; element types are
    f32, bf16, f16, f64 (for reference numerics), i32, i64 and i1 (the result
    of comparisons). A model is a `func.func` whose arguments are tagged with
    `tg.name`, `tg.role` ("param" or "input") and, for parameters, `tg.init`.
    Composite ops (softmax, layer_norm, gelu, cross_entropy, ...) are ops in
    their own right so that differentiation and fusion can treat them well;
    `tg-decompose` rewrites them into primitive tg ops.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class TG_Op<string mnemonic, list<Trait> traits = []>
    : Op<TG_Dialect, mnemonic, traits>;

#endif // TG_DIALECT_TD
