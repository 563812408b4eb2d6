//===- TGInterfaces.td - tg op interfaces ------------------*- tablegen -*-===//
//
// The differentiation interface: each op states its own derivative next to
// its definition, so tg-autodiff has no central switch statement.
//
//===----------------------------------------------------------------------===//

#ifndef TG_INTERFACES_TD
#define TG_INTERFACES_TD

include "mlir/IR/OpBase.td"

def TG_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::tg";
  let description = [{
    An op that can be differentiated in reverse mode. `buildVJP` receives the
    cotangent of each result (never null) and appends one value per operand:
    the operand's cotangent, with exactly the operand's type, or a null
    Value for operands that are not differentiable (integer labels, seeds,
    predicates). Broadcast operands get cotangents summed back to their
    shape. The builder's insertion point is where the backward ops go.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the vector-Jacobian product of this op.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // TG_INTERFACES_TD
