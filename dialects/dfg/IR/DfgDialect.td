//===- DfgDialect.td - The dfg dialect ---------------------*- tablegen -*-===//
//
// Part of meshc. The dataflow-graph dialect: ONNX-level tensor primitives and
// (later) transformer-level fused operators, on ranked tensors.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_DFGDIALECT_TD
#define MESHC_DIALECTS_DFG_IR_DFGDIALECT_TD

include "mlir/IR/OpBase.td"

def Dfg_Dialect : Dialect {
  let name = "dfg";
  let cppNamespace = "::meshc::dfg";
  let summary = "Dataflow-graph tensor operations of an imported model";
  let description = [{
    `dfg` holds a model as meshc sees it between import and sharding: a pure
    dataflow graph of operations on ranked tensors. Its ops follow ONNX
    semantics (numpy broadcasting, negative axes counted from the back) so that
    import is a one-to-one translation, and carry the invariants that the
    sharding and code-generation passes rely on as verifiers.

    Weights are never inlined: `dfg.weight` refers to bytes in a file.
    Only small literal tensors (shape vectors, scalars) live in `dfg.constant`.
  }];
  let hasConstantMaterializer = 1;
}

/// Element types a dfg tensor may hold (see runtime/include/meshc/runtime/dtype.h).
def Dfg_ElementType : AnyTypeOf<[F32, F16, BF16, I64, I32, I1]>;
def Dfg_NumericType : AnyTypeOf<[F32, F16, BF16, I64, I32]>;
def Dfg_FloatType : AnyTypeOf<[F32, F16, BF16]>;

def Dfg_Tensor : RankedTensorOf<[Dfg_ElementType]>;
def Dfg_NumericTensor : RankedTensorOf<[Dfg_NumericType]>;
def Dfg_FloatTensor : RankedTensorOf<[Dfg_FloatType]>;
def Dfg_BoolTensor : RankedTensorOf<[I1]>;
def Dfg_IntegerTensor : RankedTensorOf<[I64, I32]>;
def Dfg_StaticTensor : StaticShapeTensorOf<[Dfg_ElementType]>;

class Dfg_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dfg_Dialect, mnemonic, traits>;

#endif // MESHC_DIALECTS_DFG_IR_DFGDIALECT_TD
