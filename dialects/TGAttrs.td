//===- TGAttrs.td - tg attributes and enums ----------------*- tablegen -*-===//
//
// Enums of op semantics and the parameter-initializer attribute that tags
// model parameters.
//
//===----------------------------------------------------------------------===//

#ifndef TG_ATTRS_TD
#define TG_ATTRS_TD

include "dialects/TGDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def TG_CmpPredicate : I32EnumAttr<"CmpPredicate", "comparison predicate", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::tg";
}

def TG_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU formula: exact (erf) or the tanh approximation", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::mlir::tg";
}

def TG_InitializerAttr : AttrDef<TG_Dialect, "Initializer"> {
  let mnemonic = "init";
  let summary = "How a parameter is initialised";
  let description = [{
    `#tg.init<KIND>` or `#tg.init<KIND(a, b)>`. Kinds and their arguments:
    `zeros`, `ones`, `constant(v)`, `normal(mean, std)`, `uniform(lo, hi)`,
    `glorot_uniform`, `glorot_normal`, `kaiming_uniform`, `kaiming_normal`
    (fan-in/fan-out come from the parameter's shape).

    ```mlir
    func.func @forward(%w: tensor<784x256xf32> {tg.name = "fc1.weight",
        tg.role = "param", tg.init = #tg.init<normal(0.0, 2.0e-02)>})
    ```
  }];
  let parameters = (ins StringRefParameter<"initializer kind">:$kind,
                        "::mlir::DenseF64ArrayAttr":$args);
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$kind, "::llvm::ArrayRef<double>":$args), [{
      return $_get($_ctxt, kind, ::mlir::DenseF64ArrayAttr::get($_ctxt, args));
    }]>
  ];
  let extraClassDeclaration = [{
    /// The arguments as plain numbers.
    ::llvm::ArrayRef<double> getValues() const { return getArgs().asArrayRef(); }
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // TG_ATTRS_TD
