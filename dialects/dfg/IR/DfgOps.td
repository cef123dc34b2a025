//===- DfgOps.td - dfg operations --------------------------*- tablegen -*-===//
//
// Part of meshc. The first family of dfg ops: weight and constant references,
// matmul, broadcasting elementwise arithmetic, reshape, transpose, softmax.
//
// Every op lists its invariants as a numbered list in its description; the
// verifier checks each one and test/dialects/dfg/invalid.mlir has a negative
// test named after each number.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_DFGOPS_TD
#define MESHC_DIALECTS_DFG_IR_DFGOPS_TD

include "dialects/dfg/IR/DfgDialect.td"
include "dialects/dfg/IR/DfgInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Sources: weights and literal constants
//===----------------------------------------------------------------------===//

def Dfg_WeightOp : Dfg_Op<"weight", !listconcat([Pure], Dfg_ShapeAndShardingRules)> {
  let summary = "A tensor whose bytes live in a file (a weight reference)";
  let description = [{
    Refers to `length` bytes at `offset` of `file`, read as a dense row-major
    tensor of the result type. The bytes are never copied into the IR: passes
    reason about the reference, and code generation slices it into per-rank
    weight files by streaming. `name` is the initializer's name in the source
    model and appears in diagnostics.

    With `stored`, the file holds elements of that floating-point type and
    the reference converts them to the result's (`meshc compile --dtype`):
    rounding to nearest even, with finite values beyond the result type's
    range saturating to its largest finite value. Code generation converts
    while it slices, so rank weight files hold the result type.

    With `quantization`, the file holds a weight-only quantized matrix
    (onnxruntime's MatMulNBits, MatMulBnb4 and GatherBlockQuantized, ONNX's
    DequantizeLinear of an initializer): `bits`-bit integers (two's
    complement with `signed`, else unsigned) packed low bits first,
    `row_bytes` bytes per row of `columns` elements, element k of a row at
    bit k * bits of the row. A block of `block_rows` rows (default 1) by
    `block_size` columns shares a scale and a zero point: `scales` is a
    reference {file, offset, length, type} to the [ceil(rows / block_rows),
    blocks] grid of floats (f32, f16 or bf16; blocks = ceil(columns /
    block_size)), and `zero_points`, when present, to that grid's integers
    (type ui8: packed as the elements are, of their signedness, a grid row
    every `zero_point_row_bits` bits, by default ceil(blocks * bits / 8)
    whole bytes), or `zero_point_values` holds them (one per grid entry);
    without them the zero point is `zero_point`, by default 2^(bits - 1).
    Without `scales`, every scale is `scale`, by default 1. With
    `high_bits_first`, each byte's elements are packed from its high bits
    down (onnxruntime's MatMulBnb4). The weight's elements, in row-major
    order, are (q - zero point) * scale, or with `codebook` (2^bits f32
    values, no zero points: bitsandbytes' FP4 and NF4 codes, as MatMulBnb4
    holds them) codebook[q] * scale, computed in f32 and
    rounded to the result's element type: code generation dequantizes while
    it slices, so rank weight files hold the result type. (A reshaped
    reference keeps the elements' order, so the result's shape may differ
    from [rows, columns].)

    Invariants:
    1. The result type has a static shape.
    2. `offset` is non-negative.
    3. `length` equals the element count times the byte width of the stored
       element type (`stored`, else the result's; bool takes one byte), or
       with `quantization`, rows * row_bytes.
    4. `file` is a non-empty relative path without `..` components, so a
       reference can never leave the model's folder.
    5. `stored`, when present, is a floating-point type other than the
       result's floating-point element type.
    6. `quantization`, when present, excludes `stored`, has a floating-point
       result, bits of 2, 4 or 8, a positive block size and block rows, a
       column count dividing the element count, row_bytes holding a row,
       zero-point rows of whole elements holding a grid row, and scales and
       packed (ui8) zero points of the lengths above in files inside the
       model's folder.

    Example:

    ```mlir
    %w = dfg.weight "h.0.attn.c_attn.weight" in "model.onnx.data"
           [offset = 4096, length = 49152] : tensor<64x192xf32>
    %h = dfg.weight "h.0.attn.c_attn.weight" in "model.onnx.data"
           [offset = 4096, length = 49152] stored f32 : tensor<64x192xf16>
    %q = dfg.weight "fc.weight_Q4" in "model.onnx.data"
           [offset = 0, length = 2048] {quantization = {bits = 4 : i64,
           block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64,
           scales = {file = "model.onnx.data", offset = 2048 : i64,
           length = 512 : i64, type = f32}}} : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$file, I64Attr:$offset,
                       I64Attr:$length, OptionalAttr<TypeAttr>:$stored,
                       OptionalAttr<DictionaryAttr>:$quantization);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $name `in` $file ` ` `[` `offset` `=` $offset `,` `length` `=` $length `]`
    (`stored` $stored^)? attr-dict `:` type($result)
  }];
  let builders = [
    // A reference whose file holds the result's own element type.
    OpBuilder<(ins "::mlir::Type":$result, "::llvm::StringRef":$name,
                   "::llvm::StringRef":$file, "int64_t":$offset,
                   "int64_t":$length), [{
      build($_builder, $_state, result, name, file, offset, length,
            ::mlir::TypeAttr(), ::mlir::DictionaryAttr());
    }]>,
    // A converted reference (`stored`), not quantized.
    OpBuilder<(ins "::mlir::Type":$result, "::llvm::StringRef":$name,
                   "::llvm::StringRef":$file, "int64_t":$offset,
                   "int64_t":$length, "::mlir::TypeAttr":$stored), [{
      build($_builder, $_state, result, name, file, offset, length, stored,
            ::mlir::DictionaryAttr());
    }]>,
  ];
  let extraClassDeclaration = [{
    /// The element type of the bytes in the file.
    ::mlir::Type getStoredElementType() {
      return getStored() ? *getStored() : getType().getElementType();
    }
  }];
  let hasVerifier = 1;
}

def Dfg_ConstantOp : Dfg_Op<"constant",
    !listconcat([ConstantLike, Pure, AllTypesMatch<["value", "result"]>],
                Dfg_ShapeAndShardingRules)> {
  let summary = "A small literal tensor (shape vectors, scalars, epsilons)";
  let description = [{
    Holds its value inline. Meant for the small tensors a graph computes with
    (shape vectors, scalar constants), never for weights: those are
    `dfg.weight` references.

    Invariants:
    1. Unless it is a splat (one value repeated, stored once), `value` holds
       at most 65536 elements (`kMaxConstantElements`); larger tensors must
       be `dfg.weight` references.
    2. The value's type is the result type and has a static shape.

    Example:

    ```mlir
    %eps = dfg.constant dense<1.0e-05> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Dfg_StaticTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Larger literal tensors must be weight references.
    static constexpr int64_t kMaxConstantElements = 65536;
  }];
}

//===----------------------------------------------------------------------===//
// Ops whose result type follows from their operands
//===----------------------------------------------------------------------===//

/// An op with shape inference. Its verifier runs the inference and reports
/// any broken invariant once, with the op's own message; the generic verifier
/// of InferTypeOpInterface is bypassed (refineReturnTypes) because it would
/// add a second, vaguer diagnostic. A declared result may be more or less
/// refined than the inferred one, as long as they agree where both are static.
class Dfg_InferredOp<string mnemonic, list<Trait> traits = []>
    : Dfg_Op<mnemonic, traits # [Pure, InferTypeOpAdaptorWithIsCompatible]> {
  let hasVerifier = 1;
  code inferredOpDeclarations = [{
    static ::llvm::LogicalResult refineReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location>,
        ::mlir::ValueRange, ::mlir::DictionaryAttr, ::mlir::OpaqueProperties,
        ::mlir::RegionRange, ::llvm::SmallVectorImpl<::mlir::Type> &) {
      return ::mlir::success(); // checked by verify()
    }
  }];
  code inferredOpDefinitions = [{
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l,
                                            ::mlir::TypeRange r) {
      return ::meshc::dfg::areCompatibleTensorTypes(l, r);
    }
    ::llvm::LogicalResult $cppClass::verify() {
      return ::meshc::dfg::verifyInferredTypes(*this);
    }
  }];
  let extraClassDeclaration = inferredOpDeclarations;
  let extraClassDefinition = inferredOpDefinitions;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Dfg_MatMulOp : Dfg_InferredOp<"matmul",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Matrix product with numpy semantics (ONNX MatMul)";
  let description = [{
    Multiplies the last two dimensions of `lhs` (M×K) and `rhs` (K×N); leading
    dimensions are batch dimensions and broadcast against each other. A 1-D
    `lhs` is treated as 1×K and a 1-D `rhs` as K×1, and the inserted dimension
    is dropped from the result, as numpy.matmul does.

    Invariants:
    1. Both operands have rank at least 1 and the same element type as the
       result.
    2. The contracting dimensions agree: `lhs` dim -1 equals `rhs` dim -2
       (dim 0 when `rhs` is 1-D) wherever both are static.
    3. The batch dimensions broadcast (each pair equal, or one of them 1).
    4. The result shape is the broadcast batch shape followed by M and N.

    Example:

    ```mlir
    %y = dfg.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x192xf32>)
                               -> tensor<2x16x192xf32>
    ```
  }];
  let arguments = (ins Dfg_NumericTensor:$lhs, Dfg_NumericTensor:$rhs);
  let results = (outs Dfg_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic with ONNX multidirectional broadcasting
//===----------------------------------------------------------------------===//

/// An elementwise op (Dfg_ElementwiseOpInterface) defined by three strings:
/// `reference`, a C++ double expression of the operand elements `a` and `b`
/// (the reference evaluator); `fused`, the float expression of a generated
/// fused kernel with `@0` and `@1` standing for the operands (empty: not
/// fusible); and the runtime kernel, `BinaryOp::<onnxName>`.
class Dfg_ElementwiseDefs<string kernel, string reference, string fused> {
  code elementwiseDefinitions = [{
    double $cppClass::evaluateElement(::llvm::ArrayRef<double> operands) {
      [[maybe_unused]] const double a = operands[0];
      [[maybe_unused]] const double b = operands.size() > 1 ? operands[1] : 0;
      [[maybe_unused]] const double x = a;
      return }] # reference # [{;
    }
    ::llvm::StringRef $cppClass::getKernelName() { return "}] # kernel # [{"; }
    std::string $cppClass::getFusedExpression(
        ::llvm::ArrayRef<std::string> operands) {
      return ::meshc::dfg::fusedExpression("}] # fused # [{", operands);
    }
  }];
}

class Dfg_BroadcastBinaryOp<string mnemonic, string onnxName,
                            string reference, string fused,
                            list<Trait> traits = [],
                            Type tensorType = Dfg_NumericTensor>
    : Dfg_InferredOp<mnemonic, traits # [SameOperandsAndResultElementType,
          DeclareOpInterfaceMethods<Dfg_ElementwiseOpInterface,
                                    ["getFusedExpression"]>]>,
      Dfg_ElementwiseDefs<onnxName, reference, fused> {
  let summary = "Elementwise " # onnxName # " with numpy broadcasting";
  let description = [{
    Applies the operation elementwise after broadcasting both operands to a
    common shape (ONNX multidirectional broadcasting: shapes are aligned at
    the last dimension; each pair of dimensions must be equal or one of them 1).

    Invariants:
    1. Both operands and the result have the same element type.
    2. The operand shapes broadcast.
    3. The result shape is the broadcast shape.

    Example:

    ```mlir
    %z = dfg.}] # mnemonic # [{ %x, %b : (tensor<2x16x64xf32>, tensor<64xf32>)
                                   -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs tensorType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDefinition = inferredOpDefinitions # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::meshc::dfg::inferBroadcastBinary(
          loc, getOperationName(), adaptor.getLhs(), adaptor.getRhs(), types);
    }
  }] # elementwiseDefinitions;
}

def Dfg_AddOp : Dfg_BroadcastBinaryOp<"add", "Add", "a + b", "@0 + @1",
                                      [Commutative]>;
def Dfg_SubOp : Dfg_BroadcastBinaryOp<"sub", "Sub", "a - b", "@0 - @1">;
def Dfg_MulOp : Dfg_BroadcastBinaryOp<"mul", "Mul", "a * b", "@0 * @1",
                                      [Commutative]>;
// Integer division truncates toward zero, as ONNX Div.
def Dfg_DivOp : Dfg_BroadcastBinaryOp<"div", "Div",
    "::llvm::isa<::mlir::IntegerType>(getType().getElementType()) "
    "? std::trunc(a / b) : a / b", "@0 / @1">;
def Dfg_PowOp : Dfg_BroadcastBinaryOp<"pow", "Pow", "std::pow(a, b)",
                                      "powf(@0, @1)">;
def Dfg_MinOp : Dfg_BroadcastBinaryOp<"min", "Min", "std::min(a, b)",
                                      "rt::fused::minimum(@0, @1)",
                                      [Commutative]>;
def Dfg_MaxOp : Dfg_BroadcastBinaryOp<"max", "Max", "std::max(a, b)",
                                      "rt::fused::maximum(@0, @1)",
                                      [Commutative]>;
def Dfg_AndOp : Dfg_BroadcastBinaryOp<"and", "And", "double(a != 0 && b != 0)",
                                      "", [Commutative], Dfg_BoolTensor>;
def Dfg_OrOp : Dfg_BroadcastBinaryOp<"or", "Or", "double(a != 0 || b != 0)", "",
                                     [Commutative], Dfg_BoolTensor>;

/// Bitwise operations on integers (ONNX BitwiseAnd/Or/Xor; the importer
/// writes BitwiseNot as -1 - x). The reference evaluator holds integers as
/// doubles: exact up to 2^53.
def Dfg_BitwiseAndOp : Dfg_BroadcastBinaryOp<"bitwise_and", "BitwiseAnd",
    "double(int64_t(a) & int64_t(b))", "", [Commutative], Dfg_IntegerTensor>;
def Dfg_BitwiseOrOp : Dfg_BroadcastBinaryOp<"bitwise_or", "BitwiseOr",
    "double(int64_t(a) | int64_t(b))", "", [Commutative], Dfg_IntegerTensor>;
def Dfg_BitwiseXorOp : Dfg_BroadcastBinaryOp<"bitwise_xor", "BitwiseXor",
    "double(int64_t(a) ^ int64_t(b))", "", [Commutative], Dfg_IntegerTensor>;

/// Comparisons: numeric operands, bool result, broadcasting as above.
class Dfg_CompareOp<string mnemonic, string onnxName, string relation,
                    list<Trait> traits = []>
    : Dfg_InferredOp<mnemonic, traits # [SameOperandsElementType,
          DeclareOpInterfaceMethods<Dfg_ElementwiseOpInterface,
                                    ["getFusedExpression"]>]>,
      Dfg_ElementwiseDefs<onnxName, "double(a " # relation # " b)", ""> {
  let summary = "Elementwise " # onnxName # " comparison with numpy broadcasting";
  let description = [{
    `result = lhs }] # relation # [{ rhs` elementwise, after broadcasting both
    operands to a common shape.

    Invariants:
    1. Both operands have the same element type; the result is bool (i1).
    2. The operand shapes broadcast.
    3. The result shape is the broadcast shape.

    Example:

    ```mlir
    %m = dfg.}] # mnemonic # [{ %a, %b : (tensor<8x8xi64>, tensor<8xi64>) -> tensor<8x8xi1>
    ```
  }];
  let arguments = (ins Dfg_NumericTensor:$lhs, Dfg_NumericTensor:$rhs);
  let results = (outs Dfg_BoolTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDefinition = inferredOpDefinitions # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::meshc::dfg::inferBroadcastBinary(
          loc, getOperationName(), adaptor.getLhs(), adaptor.getRhs(), types,
          ::mlir::IntegerType::get(context, 1));
    }
  }] # elementwiseDefinitions;
}

def Dfg_EqualOp : Dfg_CompareOp<"equal", "Equal", "==", [Commutative]>;
def Dfg_LessOp : Dfg_CompareOp<"less", "Less", "<">;
def Dfg_GreaterOp : Dfg_CompareOp<"greater", "Greater", ">">;
def Dfg_LessOrEqualOp : Dfg_CompareOp<"less_or_equal", "LessOrEqual", "<=">;
def Dfg_GreaterOrEqualOp
    : Dfg_CompareOp<"greater_or_equal", "GreaterOrEqual", ">=">;

def Dfg_WhereOp : Dfg_InferredOp<"where",
    [DeclareOpInterfaceMethods<Dfg_ElementwiseOpInterface>]> {
  let summary = "Select elementwise between two tensors (ONNX Where)";
  let description = [{
    `result = condition ? lhs : rhs` elementwise, after broadcasting all three
    operands to a common shape.

    Invariants:
    1. `condition` is bool; `lhs`, `rhs` and the result share an element type.
    2. The three shapes broadcast.
    3. The result shape is the broadcast shape.

    Example:

    ```mlir
    %s = dfg.where %mask, %scores, %neg_inf
           : (tensor<1x1x8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Dfg_BoolTensor:$condition, Dfg_Tensor:$lhs,
                       Dfg_Tensor:$rhs);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDefinition = inferredOpDefinitions # [{
    double $cppClass::evaluateElement(::llvm::ArrayRef<double> v) {
      return v[0] != 0 ? v[1] : v[2];
    }
    ::llvm::StringRef $cppClass::getKernelName() { return ""; } // k::where
  }];
}

def Dfg_CastOp : Dfg_InferredOp<"cast",
    [DeclareOpInterfaceMethods<Dfg_ElementwiseOpInterface,
                               ["getFusedExpression"]>]> {
  let summary = "Convert elements to another type (ONNX Cast)";
  let description = [{
    Converts each element to `to` as ONNX Cast does: floats round to nearest
    even, float to integer truncates toward zero, to bool is `x != 0`.

    Invariants:
    1. `to` is a dfg element type.
    2. The result has the input's shape and element type `to`.

    Example:

    ```mlir
    %h = dfg.cast %x to f16 : (tensor<2x8xf32>) -> tensor<2x8xf16>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, TypeAttr:$to);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `to` $to attr-dict `:` functional-type($input, $result)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary functions
//===----------------------------------------------------------------------===//

/// `reference` and `fused` as for Dfg_ElementwiseDefs, with `x` the operand
/// element; the runtime kernel is `UnaryOp::<kernel>`.
class Dfg_UnaryOp<string mnemonic, string kernel, string onnxName,
                  string formula, string reference, string fused,
                  Type tensorType = Dfg_FloatTensor, list<Trait> traits = []>
    : Dfg_InferredOp<mnemonic, traits # [SameOperandsAndResultElementType,
          DeclareOpInterfaceMethods<Dfg_ElementwiseOpInterface,
                                    ["getFusedExpression"]>]>,
      Dfg_ElementwiseDefs<kernel, reference, fused> {
  let summary = "Elementwise " # onnxName;
  let description = [{
    `result = }] # formula # [{` for each element.

    Invariants:
    1. The operand and result have the same element type, one this op
       accepts.
    2. The result has the operand's shape.

    Example:

    ```mlir
    %y = dfg.}] # mnemonic # [{ %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type($input, $result)
  }];
  let extraClassDefinition = inferredOpDefinitions # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      types.push_back(adaptor.getInput().getType()); // 2
      return ::mlir::success();
    }
  }] # elementwiseDefinitions;
}

def Dfg_SqrtOp : Dfg_UnaryOp<"sqrt", "Sqrt", "Sqrt", "sqrt(x)", "std::sqrt(x)",
                             "sqrtf(@0)">;
def Dfg_ReciprocalOp : Dfg_UnaryOp<"reciprocal", "Reciprocal", "Reciprocal",
                                   "1 / x", "1 / x", "1.0f / @0">;
def Dfg_NegOp : Dfg_UnaryOp<"neg", "Neg", "Neg", "-x", "-x", "-@0",
                            Dfg_NumericTensor>;
def Dfg_SiluOp : Dfg_UnaryOp<"silu", "Silu", "SiLU (swish, x times its sigmoid)",
                             "x / (1 + exp(-x))", "x / (1 + std::exp(-x))",
                             "rt::fused::silu(@0)">;
def Dfg_ErfOp : Dfg_UnaryOp<"erf", "Erf", "Erf", "erf(x)", "std::erf(x)",
                            "erff(@0)">;
def Dfg_TanhOp : Dfg_UnaryOp<"tanh", "Tanh", "Tanh", "tanh(x)", "std::tanh(x)",
                             "tanhf(@0)">;
def Dfg_SigmoidOp : Dfg_UnaryOp<"sigmoid", "Sigmoid", "Sigmoid",
                                "1 / (1 + exp(-x))", "1 / (1 + std::exp(-x))",
                                "rt::fused::sigmoid(@0)">;
def Dfg_ExpOp : Dfg_UnaryOp<"exp", "Exp", "Exp", "exp(x)", "std::exp(x)",
                            "expf(@0)">;
def Dfg_CosOp : Dfg_UnaryOp<"cos", "Cos", "Cos", "cos(x)", "std::cos(x)",
                            "cosf(@0)">;
def Dfg_SinOp : Dfg_UnaryOp<"sin", "Sin", "Sin", "sin(x)", "std::sin(x)",
                            "sinf(@0)">;
def Dfg_TanOp : Dfg_UnaryOp<"tan", "Tan", "Tan", "tan(x)", "std::tan(x)",
                            "tanf(@0)">;
def Dfg_AsinOp : Dfg_UnaryOp<"asin", "Asin", "Asin", "asin(x)", "std::asin(x)",
                             "asinf(@0)">;
def Dfg_AcosOp : Dfg_UnaryOp<"acos", "Acos", "Acos", "acos(x)", "std::acos(x)",
                             "acosf(@0)">;
def Dfg_AtanOp : Dfg_UnaryOp<"atan", "Atan", "Atan", "atan(x)", "std::atan(x)",
                             "atanf(@0)">;
def Dfg_SinhOp : Dfg_UnaryOp<"sinh", "Sinh", "Sinh", "sinh(x)", "std::sinh(x)",
                             "sinhf(@0)">;
def Dfg_CoshOp : Dfg_UnaryOp<"cosh", "Cosh", "Cosh", "cosh(x)", "std::cosh(x)",
                             "coshf(@0)">;
def Dfg_AsinhOp : Dfg_UnaryOp<"asinh", "Asinh", "Asinh", "asinh(x)", "std::asinh(x)",
                              "asinhf(@0)">;
def Dfg_AcoshOp : Dfg_UnaryOp<"acosh", "Acosh", "Acosh", "acosh(x)", "std::acosh(x)",
                              "acoshf(@0)">;
def Dfg_AtanhOp : Dfg_UnaryOp<"atanh", "Atanh", "Atanh", "atanh(x)", "std::atanh(x)",
                              "atanhf(@0)">;
def Dfg_LogOp : Dfg_UnaryOp<"log", "Log", "Log", "log(x)", "std::log(x)",
                            "logf(@0)">;
def Dfg_FloorOp : Dfg_UnaryOp<"floor", "Floor", "Floor", "floor(x)",
                              "std::floor(x)", "floorf(@0)">;
def Dfg_CeilOp : Dfg_UnaryOp<"ceil", "Ceil", "Ceil", "ceil(x)", "std::ceil(x)",
                             "ceilf(@0)">;
def Dfg_RoundOp : Dfg_UnaryOp<"round", "Round",
                              "Round (halves to even)", "round(x)",
                              "std::nearbyint(x)", "nearbyintf(@0)">;
def Dfg_NotOp : Dfg_UnaryOp<"not", "Not", "Not", "!x", "double(x == 0)", "",
                            Dfg_BoolTensor>;

def Dfg_IsNaNOp : Dfg_InferredOp<"is_nan",
    [DeclareOpInterfaceMethods<Dfg_ElementwiseOpInterface,
                               ["getFusedExpression"]>]>,
    Dfg_ElementwiseDefs<"IsNaN", "double(std::isnan(x))", ""> {
  let summary = "Whether each element is NaN (ONNX IsNaN)";
  let description = [{
    `result = isnan(x)` for each element: true where the element is a NaN.
    PyTorch's scaled-dot-product attention writes it after the softmax
    (`where(isnan(p), 0, p)`) to zero fully masked rows.

    Invariants:
    1. The operand is a floating-point tensor; the result is bool (i1).
    2. The result has the operand's shape.

    Example:

    ```mlir
    %n = dfg.is_nan %p : (tensor<2x8xf32>) -> tensor<2x8xi1>
    ```
  }];
  let arguments = (ins Dfg_FloatTensor:$input);
  let results = (outs Dfg_BoolTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type($input, $result)
  }];
  let extraClassDefinition = inferredOpDefinitions # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      auto in = ::llvm::cast<::mlir::RankedTensorType>(
          adaptor.getInput().getType());
      types.push_back(in.clone(::mlir::IntegerType::get(context, 1))); // 2
      return ::mlir::success();
    }
  }] # elementwiseDefinitions;
}

def Dfg_GeluOp : Dfg_InferredOp<"gelu", [SameOperandsAndResultElementType,
    DeclareOpInterfaceMethods<Dfg_ElementwiseOpInterface,
                              ["getFusedExpression"]>]> {
  let summary = "Gaussian error linear unit, exact or tanh-approximated";
  let description = [{
    `exact`: `x * 0.5 * (1 + erf(x / sqrt(2)))` (ONNX Gelu, approximate =
    "none"); otherwise `x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 *
    x^3)))` (approximate = "tanh", GPT-2's gelu_new, com.microsoft FastGelu).

    Invariants:
    1. The operand is a floating-point tensor.
    2. The result has the operand's type.

    Example:

    ```mlir
    %a = dfg.gelu %h exact = false : (tensor<1x8x256xf32>) -> tensor<1x8x256xf32>
    ```
  }];
  let arguments = (ins Dfg_FloatTensor:$input, BoolAttr:$exact);
  let results = (outs Dfg_FloatTensor:$result);
  let assemblyFormat = [{
    $input `exact` `=` $exact attr-dict `:` functional-type($input, $result)
  }];
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def Dfg_ReshapeOp : Dfg_InferredOp<"reshape",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Reinterpret a tensor with a new shape (ONNX Reshape)";
  let description = [{
    `shape` gives the result shape with ONNX's conventions (allowzero = 0):
    `0` copies the input dimension at the same index and `-1` stands for the
    one dimension inferred from the element count. Copied dimensions may be
    dynamic; `-1` is static whenever every dynamic input dimension is copied
    through a `0`.

    Invariants:
    1. Every entry of `shape` is at least -1, and at most one is -1.
    2. A `0` entry has an index below the input rank.
    3. Input and result hold the same number of elements (when the `-1`
       entry is inferred, the element count divides evenly).
    4. The result type agrees with the shape inferred from `shape`.

    Example:

    ```mlir
    %h = dfg.reshape %x to [0, 0, 4, 16] : (tensor<2x8x64xf32>)
                                             -> tensor<2x8x4x16xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `to` $shape attr-dict `:` functional-type($input, $result)
  }];
  let hasFolder = 1;
}

def Dfg_TransposeOp : Dfg_InferredOp<"transpose",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Permute the dimensions of a tensor (ONNX Transpose)";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`.

    Invariants:
    1. `perm` has one entry per input dimension.
    2. `perm` is a permutation of `[0, rank)`.
    3. The result shape is the permuted input shape.

    Example:

    ```mlir
    %t = dfg.transpose %h perm = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>)
                                                  -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `perm` `=` $perm attr-dict `:` functional-type($input, $result)
  }];
  let hasFolder = 1;
}

def Dfg_UnsqueezeOp : Dfg_InferredOp<"unsqueeze",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Insert dimensions of size 1 (ONNX Unsqueeze)";
  let description = [{
    `axes` index the result, whose rank is the input's plus `axes.size()`.

    Invariants:
    1. Every axis lies in `[-r, r)` for the result rank `r`, and none repeats.
    2. The result is the input's shape with a 1 at each axis.

    Example:

    ```mlir
    %m = dfg.unsqueeze %mask axes = [1, 2] : (tensor<2x8xi1>) -> tensor<2x1x1x8xi1>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes attr-dict `:` functional-type($input, $result)
  }];
}

def Dfg_SqueezeOp : Dfg_InferredOp<"squeeze",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Remove dimensions of size 1 (ONNX Squeeze)";
  let description = [{
    Invariants:
    1. Every axis lies in `[-rank, rank)` of the input, and none repeats.
    2. Each squeezed dimension is 1 (or dynamic, then it must be 1 at run
       time).
    3. The result is the input's shape without the squeezed dimensions.

    Example:

    ```mlir
    %v = dfg.squeeze %x axes = [0] : (tensor<1x8xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes attr-dict `:` functional-type($input, $result)
  }];
}

def Dfg_ConcatOp : Dfg_InferredOp<"concat",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Join tensors along one axis (ONNX Concat)";
  let description = [{
    Invariants:
    1. There is at least one input; all share the element type and the rank.
    2. `axis` lies in `[-rank, rank)`.
    3. Off the axis, the inputs' dimensions agree; on it, the result's is
       their sum.

    Example:

    ```mlir
    %kv = dfg.concat %past, %new axis = 2
            : (tensor<1x4x7x8xf32>, tensor<1x4x1x8xf32>) -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Dfg_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type($inputs, $result)
  }];
}

def Dfg_GatherOp : Dfg_InferredOp<"gather", Dfg_ShapeAndShardingRules> {
  let summary = "Take slices of `data` at `indices` along an axis (ONNX Gather)";
  let description = [{
    `result[i..., j..., k...] = data[i..., indices[j...], k...]` with `axis`
    choosing where `indices` goes; a negative index counts from the end. An
    embedding lookup is a gather on axis 0 of the weight.

    Invariants:
    1. `data` and the result share an element type; `indices` are i32 or i64.
    2. `axis` lies in `[-rank, rank)` of `data`.
    3. The result shape is `data[:axis] + indices + data[axis+1:]`.

    Example:

    ```mlir
    %h = dfg.gather %wte, %ids axis = 0
           : (tensor<50257x768xf32>, tensor<1x16xi64>) -> tensor<1x16x768xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$data,
                       RankedTensorOf<[I32, I64]>:$indices, I64Attr:$axis);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `axis` `=` $axis attr-dict `:`
    functional-type(operands, results)
  }];
}

def Dfg_GatherNDOp : Dfg_InferredOp<"gather_nd", Dfg_ShapeAndShardingRules> {
  let summary = "Take slices of `data` at index tuples (ONNX GatherND)";
  let description = [{
    Each row of the last dimension of `indices` (length k) indexes the first
    k dimensions of `data` after its `batch_dims` leading ones:
    `result[b..., j..., r...] = data[b..., indices[b..., j..., 0..k-1], r...]`.
    A negative index counts from the end; an index outside its dimension is
    an error when the program runs. PyTorch's exporter writes it for
    advanced indexing such as `attention_mask[batch_idx, kv_idx]`.

    Invariants:
    1. `data` and the result share an element type; `indices` are i32 or i64
       of rank at least 1 with a static last dimension k.
    2. `batch_dims` lies in `[0, min(rank(data), rank(indices)))` and the
       leading `batch_dims` dimensions of `data` and `indices` agree.
    3. `1 <= k <= rank(data) - batch_dims`.
    4. The result shape is `indices[:-1] + data[batch_dims + k:]`.

    Example:

    ```mlir
    %m = dfg.gather_nd %mask, %idx batch_dims = 0
           : (tensor<2x8xi1>, tensor<2x8x2xi64>) -> tensor<2x8xi1>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$data, RankedTensorOf<[I32, I64]>:$indices,
                       I64Attr:$batch_dims);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `batch_dims` `=` $batch_dims attr-dict `:`
    functional-type(operands, results)
  }];
}

def Dfg_SliceOp : Dfg_InferredOp<"slice",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "A strided slice with constant bounds (ONNX Slice)";
  let description = [{
    For each listed axis, takes `start:end:step` as ONNX Slice does: negative
    bounds count from the end and are clamped to the dimension.

    Invariants:
    1. `starts`, `ends`, `axes` and `steps` have the same length.
    2. Each axis lies in `[-rank, rank)` and appears once; no step is 0.
    3. Each sliced static dimension has the clamped slice length; other
       dimensions are unchanged.

    Example:

    ```mlir
    %q = dfg.slice %qkv starts = [0] ends = [64] axes = [2] steps = [1]
           : (tensor<1x8x192xf32>) -> tensor<1x8x64xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `starts` `=` $starts `ends` `=` $ends `axes` `=` $axes
    `steps` `=` $steps attr-dict `:` functional-type($input, $result)
  }];
  let hasFolder = 1;
}

def Dfg_SplitOp : Dfg_InferredOp<"split",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Cut a tensor into pieces along an axis (ONNX Split)";
  let description = [{
    Result `i` holds `sizes[i]` consecutive slices of `axis`.

    Invariants:
    1. `axis` lies in `[-rank, rank)`; there is one size per result, each
       non-negative.
    2. The sizes add up to the input's dimension (when it is static).
    3. Each result is the input's shape with `sizes[i]` on the axis.

    Example:

    ```mlir
    %q, %k, %v = dfg.split %qkv axis = 2 sizes = [64, 64, 64]
        : (tensor<1x8x192xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>)
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Dfg_Tensor>:$results);
  let assemblyFormat = [{
    $input `axis` `=` $axis `sizes` `=` $sizes attr-dict `:`
    functional-type($input, $results)
  }];
}

def Dfg_ExpandOp : Dfg_InferredOp<"expand",
    !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Broadcast a tensor to a shape (ONNX Expand)";
  let description = [{
    The result shape is the numpy broadcast of the input's shape and `shape`
    (so a 1 in `shape` keeps the input's dimension, as ONNX specifies).

    Invariants:
    1. `shape` has no negative entries.
    2. The input shape and `shape` broadcast, and the result has the
       broadcast shape.

    Example:

    ```mlir
    %kv = dfg.expand %k shape = [1, 4, 2, 8, 16]
            : (tensor<1x1x2x8x16xf32>) -> tensor<1x4x2x8x16xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `shape` `=` $shape attr-dict `:` functional-type($input, $result)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Dfg_ReduceOp<string mnemonic, string onnxName, string formula>
    : Dfg_InferredOp<mnemonic,
        !listconcat([SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = onnxName # " over a set of axes";
  let description = [{
    `result = }] # formula # [{` over `axes`; with `keep_dims` the reduced
    dimensions stay as 1. The importer resolves ONNX's defaults (no axes:
    all of them), so `axes` is always explicit here.

    Invariants:
    1. Each axis lies in `[0, rank)` of the input and appears once, in
       increasing order.
    2. The result is the input's shape with the axes removed (or 1 with
       `keep_dims`).

    Example:

    ```mlir
    %m = dfg.}] # mnemonic # [{ %x axes = [2] keep_dims = true
           : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
    ```
  }];
  let arguments = (ins Dfg_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keep_dims);
  let results = (outs Dfg_NumericTensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes `keep_dims` `=` $keep_dims attr-dict `:`
    functional-type($input, $result)
  }];
  let extraClassDefinition = inferredOpDefinitions # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::meshc::dfg::inferReduction(loc, getOperationName(),
                                          adaptor.getInput(),
                                          adaptor.getAxes(),
                                          adaptor.getKeepDims(), types);
    }
  }];
}

def Dfg_ReduceMeanOp : Dfg_ReduceOp<"reduce_mean", "Mean", "mean(x)">;
def Dfg_ReduceSumOp : Dfg_ReduceOp<"reduce_sum", "Sum", "sum(x)">;
def Dfg_ReduceMaxOp : Dfg_ReduceOp<"reduce_max", "Maximum", "max(x)">;

def Dfg_CumSumOp : Dfg_InferredOp<"cumsum",
    !listconcat([SameOperandsAndResultElementType], Dfg_InputShapedRules)> {
  let summary = "Running sum along one axis (ONNX CumSum)";
  let description = [{
    `result[..., i, ...] = sum of input[..., j, ...]` along `axis` for
    `j <= i` (`j < i` when `exclusive`); with `reverse`, for `j >= i`
    (`j > i`). Exporters write it for position ids computed from an attention
    mask (`cumsum(mask) - 1`). A negative `axis` counts from the last
    dimension.

    Invariants:
    1. The element type is numeric.
    2. `axis` lies in `[-rank, rank)` and the input has rank at least 1.
    3. The result has the input's type.

    Example:

    ```mlir
    %pos = dfg.cumsum %mask axis = -1 exclusive = false reverse = false
             : (tensor<2x8xi64>) -> tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Dfg_NumericTensor:$input, I64Attr:$axis,
                       BoolAttr:$exclusive, BoolAttr:$reverse);
  let results = (outs Dfg_NumericTensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis `exclusive` `=` $exclusive `reverse` `=` $reverse
    attr-dict `:` functional-type($input, $result)
  }];
  let extraClassDeclaration = inferredOpDeclarations # [{
    /// `axis` as a non-negative dimension index.
    int64_t getNormalizedAxis() {
      int64_t axis = static_cast<int64_t>(getAxis());
      return axis < 0 ? axis + getType().getRank() : axis;
    }
  }];
}

def Dfg_TopKOp : Dfg_InferredOp<"top_k", Dfg_ShapeAndShardingRules> {
  let summary = "The K largest (or smallest) values along one axis and their "
                "positions (ONNX TopK; a sort when K is the whole axis)";
  let description = [{
    Along `axis`, `values` holds the input's `k` largest elements (smallest
    with `largest = false`) in order, largest first (smallest first), and
    `indices` their positions in the input. Equal values keep their order
    in the input (the lower position first), which is ONNX's rule and makes
    the result deterministic; NaN counts as larger than every number (as
    torch.topk orders it). Without
    `k` the result holds the whole axis: a stable sort, whose size may be
    symbolic (a mixture of experts sorting its chosen experts, the count of
    which depends on the sequence). A negative `axis` counts from the last
    dimension.

    Invariants:
    1. The element type is numeric; `indices` are i64.
    2. `axis` lies in `[-rank, rank)` and the input has rank at least 1.
    3. `k`, when given, is at least 1 and at most the axis' size when that
       is static.
    4. Both results have the input's shape with the axis of size `k` (the
       input's when `k` is absent); `values` the input's element type.

    Example:

    ```mlir
    %v, %i = dfg.top_k %logits axis = -1 k = 2 largest = true
               : (tensor<6x8xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
    %s, %p = dfg.top_k %ids axis = 0 largest = false
               : (tensor<?xi64>) -> (tensor<?xi64>, tensor<?xi64>)
    ```
  }];
  let arguments = (ins Dfg_NumericTensor:$input, I64Attr:$axis,
                       OptionalAttr<I64Attr>:$k, BoolAttr:$largest);
  let results = (outs Dfg_NumericTensor:$values,
                      RankedTensorOf<[I64]>:$indices);
  let assemblyFormat = [{
    $input `axis` `=` $axis (`k` `=` $k^)? `largest` `=` $largest attr-dict
    `:` functional-type($input, results)
  }];
  let extraClassDeclaration = inferredOpDeclarations # [{
    /// `axis` as a non-negative dimension index.
    int64_t getNormalizedAxis() {
      int64_t axis = static_cast<int64_t>(getAxis());
      return axis < 0 ? axis + getInput().getType().getRank() : axis;
    }
  }];
}

def Dfg_TriluOp : Dfg_InferredOp<"trilu",
    !listconcat([SameOperandsAndResultElementType], Dfg_InputShapedRules)> {
  let summary = "Keep the upper or lower triangle of matrices (ONNX Trilu)";
  let description = [{
    Over the last two dimensions, keeps elements with `col - row >= diagonal`
    (`upper`) or `col - row <= diagonal` (lower) and zeroes the rest.

    Invariants:
    1. The input has rank at least 2.
    2. The result has the input's type.

    Example:

    ```mlir
    %causal = dfg.trilu %ones upper = false diagonal = 0
                : (tensor<8x8xi1>) -> tensor<8x8xi1>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, BoolAttr:$upper, I64Attr:$diagonal);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `upper` `=` $upper `diagonal` `=` $diagonal attr-dict `:`
    functional-type($input, $result)
  }];
}

def Dfg_ScatterNDOp : Dfg_InferredOp<"scatter_nd",
    !listconcat([AllElementTypesMatch<["data", "updates", "result"]>], Dfg_InputShapedRules)> {
  let summary = "Write slices into a copy of a tensor (ONNX ScatterND)";
  let description = [{
    `result = data`, then for every index tuple `i` of `indices[..., :]`,
    `result[indices[i]] = updates[i]` (reduction "none"; a later duplicate
    wins), or with `accumulate`, `result[indices[i]] += updates[i]`
    (reduction "add": duplicates sum). KV-cache updates use the first; a
    mixture of experts adding each expert's output back at its tokens
    (`index_add`) the second.

    With `batch_dims = b` (default 0) the first b dimensions are batch
    dimensions, as in gather_nd: a tuple at `indices[n..., j..., :]` (n over
    the b batch dimensions) addresses dimensions b to b + q - 1 of batch
    `n...`, `result[n..., indices[n..., j...], r...] =
    updates[n..., j..., r...]`. So a batch dimension can be split like any
    parallel one (the sharding passes find these, BatchGathers.cpp).

    Invariants:
    1. `indices` are i64; their last dimension `q` is static and
       `batch_dims + q` is at most the rank of `data`; `batch_dims` lies in
       `[0, rank(indices) - 1]` and the leading `batch_dims` dimensions of
       `data` and `indices` agree.
    2. `updates` has the shape `indices.shape[:-1] + data.shape[b + q:]`.
    3. The result has `data`'s type.

    Example:

    ```mlir
    %cache = dfg.scatter_nd %past, %pos, %new
      : (tensor<1x4x16x8xf32>, tensor<1x4x1x3xi64>, tensor<1x4x1x8xf32>) -> tensor<1x4x16x8xf32>
    %sum = dfg.scatter_nd %zeros, %rows, %out accumulate
      : (tensor<6x8xf32>, tensor<12x1xi64>, tensor<12x8xf32>) -> tensor<6x8xf32>
    %rows = dfg.scatter_nd %x, %at, %row batch_dims = 2
      : (tensor<2x4x8x8xf32>, tensor<2x4x8x1xi64>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$data, RankedTensorOf<[I64]>:$indices,
                       Dfg_Tensor:$updates, UnitAttr:$accumulate,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates (`batch_dims` `=` $batch_dims^)?
    (`accumulate` $accumulate^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Dfg_EmbeddingOp : Dfg_InferredOp<"embedding", Dfg_ShapeAndShardingRules> {
  let summary = "Rows of an embedding table picked by token ids";
  let description = [{
    `result[i..., :] = table[ids[i...], :]`; a negative id counts from the
    end of the table, as in ONNX Gather (an id outside `[-vocab, vocab)` is
    an error at run time). The table is `[vocab, hidden]`; sharding may split
    it along the vocabulary (each rank looks up the ids it owns and the
    partial rows are summed) or along the hidden dimension.

    Invariants:
    1. `table` is a 2-D floating-point tensor and the result has its element
       type; `ids` are i32 or i64.
    2. The result shape is the ids' shape followed by the table's `hidden`.

    Example:

    ```mlir
    %h = dfg.embedding %wte, %ids
           : (tensor<50257x768xf32>, tensor<1x16xi64>) -> tensor<1x16x768xf32>
    ```
  }];
  let arguments = (ins Dfg_FloatTensor:$table,
                       RankedTensorOf<[I32, I64]>:$ids);
  let results = (outs Dfg_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` functional-type(operands, results)
  }];
}

def Dfg_LinearOp : Dfg_InferredOp<"linear", Dfg_ShapeAndShardingRules> {
  let summary = "A dense layer: input times a 2-D weight, plus an optional bias";
  let description = [{
    `result[..., n] = sum_k input[..., k] * W[k, n] + bias[n]`, where the
    weight operand is stored as `W` (`[in, out]`: ONNX MatMul, GPT-2's
    Conv1D) or, with `transpose_weight`, as `W^T` (`[out, in]`: PyTorch
    nn.Linear, Gemm with transB, a tied lm_head that reads the embedding
    table). The layout is an attribute so that no transpose of a weight is
    ever materialised; sharding splits `out` (column parallel) or `in` (row
    parallel) of whichever layout is stored.

    Invariants:
    1. `input`, `weight`, `bias` and the result share a floating-point element
       type; `input` has rank at least 1 and `weight` is 2-D.
    2. `input`'s last dimension equals the weight's `in` dimension.
    3. `bias`, when present, is 1-D of the weight's `out` dimension.
    4. The result is `input`'s shape with the last dimension replaced by
       `out`.

    Example:

    ```mlir
    %y = dfg.linear %x, %w, %b transpose_weight = false
           : (tensor<1x8x32xf32>, tensor<32x96xf32>, tensor<96xf32>)
             -> tensor<1x8x96xf32>
    ```
  }];
  let arguments = (ins Dfg_FloatTensor:$input, Dfg_FloatTensor:$weight,
                       Optional<Dfg_FloatTensor>:$bias,
                       BoolAttr:$transpose_weight);
  let results = (outs Dfg_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `transpose_weight` `=` $transpose_weight
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = inferredOpDeclarations # [{
    /// The weight's `in` (contracted) and `out` dimensions.
    int64_t getInFeatures() {
      auto w = ::llvm::cast<::mlir::RankedTensorType>(getWeight().getType());
      return w.getDimSize(getTransposeWeight() ? 1 : 0);
    }
    int64_t getOutFeatures() {
      auto w = ::llvm::cast<::mlir::RankedTensorType>(getWeight().getType());
      return w.getDimSize(getTransposeWeight() ? 0 : 1);
    }
  }];
}

def Dfg_AttentionOp : Dfg_InferredOp<"attention",
    !listconcat([AttrSizedOperandSegments], Dfg_ShapeAndShardingRules)> {
  let summary = "Scaled dot-product attention with grouped heads and a KV cache";
  let description = [{
    With `past_key`/`past_value`, the keys and values are first extended:
    `K = concat(past_key, key)`, `V = concat(past_value, value)` along the
    sequence (the `present` results are these two); otherwise `K = key`,
    `V = value`. Query head `h` uses KV head `h / (heads / kv_heads)`
    (grouped-query attention; multi-query when kv_heads = 1). Then

      scores = scale * Q K^T + bias,  bias from `mask` (bool: 0 where true,
               -inf where false; float: added) and, with `causal`, -inf where
               key j > query i + P (P = past length: the new keys line up
               with the queries, as in ONNX Attention-23)
      scores = softcap * tanh(scores / softcap)     (when softcap > 0)
      result = softmax(scores over keys) V   (zeros where every key is masked)

    With `sinks` (`[heads]`, gpt-oss's attention sinks, GroupQueryAttention's
    head_sink), head h's softmax has one more term, `sinks[h]`, in its
    denominator: a score column beside the keys' that no value row follows,
    `p_j = exp(s_j) / (exp(sinks[h]) + sum_k exp(s_k))`. It is not masked
    and not capped; a row whose every key is masked gives zeros.

    The softcap comes after the mask, as ONNX Attention-23 and onnxruntime
    apply it: with a softcap, a masked key scores -softcap, not -inf. With
    `softcap_first` it comes before (`scale * Q K^T` is capped, then the
    mask and the causal limit apply), as transformers' Gemma-2 computes it:
    a masked key is then excluded.

    With `causal_fill` F (finite, at most -1e30: HF's finfo.min fill), a
    key j > i + P scores `scale * q.k + F`, rounded to the element type, in
    place of the mask's value and -inf: the op then computes what the mask
    `where(causal and m, 0, F)` computes with `where(m, 0, F)` as its mask.
    Where a row has a key without the fill, the keys with it weigh exactly
    zero, as under -inf; a row whose every key carries the fill (a
    left-padding query under HF's causal and padding mask) spreads evenly
    over all keys, future ones included, where with -inf it would give
    zeros.

    With `past_lengths` (i64 `[batch]`, only with a past; a KV cache whose
    rows hold different amounts of history, as GroupQueryAttention's
    seqlens_k gives them), row b's history is the first L_b = past_lengths[b]
    positions of its past, and its new keys and values follow them: the
    present's row b holds past[b, :, :L_b], then key[b] (or value[b]), then
    zeros up to past + seq positions; K and V are the presents, and with
    `causal` query i of row b sees the keys j <= L_b + i (P = L_b above).
    A negative L_b, down to -seq, is a left-padded row whose first -L_b new
    tokens come before its start: their keys and values are dropped (the
    present's row b begins with key[b, :, -L_b:]) and, with `causal`, their
    queries see no key (zeros). An L_b outside [-seq, past] is an error.

    Layout: `query` `[batch, heads, seq, head_dim]`, `key`/`value`
    `[batch, kv_heads, kv_seq, head_dim | v_dim]`, result
    `[batch, heads, seq, v_dim]`. (ONNX Attention-23; the com.microsoft
    attention ops map here too.)

    Invariants:
    1. query, key, value (and the past tensors) are 4-D and share a
       floating-point element type; the mask is bool or of that type.
    2. Batch sizes agree; query and key share head_dim; key and value share
       kv_heads and kv_seq; the past tensors match key/value except in length.
    3. kv_heads divides heads.
    4. `scale` is positive and `softcap` is not negative; past_key and
       past_value come together, with two `present` results, or not at all.
    5. The mask broadcasts to `[batch, heads, seq, total kv_seq]`.
    6. The result is `[batch, heads, seq, v_dim]`; each present tensor is its
       past extended by the new keys or values.
    7. `causal_fill` comes only with `causal`, and is finite and at most
       -1e30.
    8. `past_lengths` comes only with a past and is a 1-D i64 tensor of the
       batch's size.
    9. `sinks` is a 1-D tensor of the heads' number, of the query's element
       type.

    Example:

    ```mlir
    %o = dfg.attention %q, %k, %v scale = 0.353553385 causal = true
           : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>)
             -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins Dfg_FloatTensor:$query, Dfg_FloatTensor:$key,
                       Dfg_FloatTensor:$value, Optional<Dfg_Tensor>:$mask,
                       Optional<Dfg_FloatTensor>:$past_key,
                       Optional<Dfg_FloatTensor>:$past_value,
                       Optional<Dfg_Tensor>:$past_lengths,
                       Optional<Dfg_FloatTensor>:$sinks, F32Attr:$scale,
                       BoolAttr:$causal,
                       DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                       DefaultValuedAttr<BoolAttr, "false">:$softcap_first,
                       OptionalAttr<F32Attr>:$causal_fill);
  let results = (outs Dfg_FloatTensor:$result,
                      Variadic<Dfg_FloatTensor>:$present);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `)`)?
    (`past` `(` $past_key^ `,` $past_value `)`)?
    (`past_lengths` `(` $past_lengths^ `)`)?
    (`sinks` `(` $sinks^ `)`)?
    `scale` `=` $scale `causal` `=` $causal attr-dict `:`
    functional-type(operands, results)
  }];
}

def Dfg_RotaryOp : Dfg_InferredOp<"rotary", Dfg_InputShapedRules> {
  let summary = "Rotary position embedding of attention heads";
  let description = [{
    Rotates the first `rotary_dim` features of every head of `input`
    (`[batch, heads, seq, head_dim]`) by position-dependent angles, whose
    cosines and sines come from `cos` and `sin`:

    - with `positions` (`[batch, seq]`, i64), `cos`/`sin` are caches
      `[max_position, rotary_dim / 2]` indexed by position;
    - without, they are already per position: `[batch, seq, rotary_dim / 2]`
      (or `[1, seq, rotary_dim / 2]`, the same for every batch row).

    Half-split (`interleaved = false`, Llama/GPT-NeoX): with `x1, x2` the two
    halves of the rotated features, `out1 = x1 * cos - x2 * sin`,
    `out2 = x2 * cos + x1 * sin`. Interleaved (GPT-J): the same on the pairs
    `(x[2i], x[2i+1])`. Features past `rotary_dim` pass through unchanged.
    (ONNX RotaryEmbedding-23; com.microsoft RotaryEmbedding.)

    Invariants:
    1. `input` is a 4-D floating-point tensor; `cos` and `sin` have its
       element type and the same shape as each other.
    2. `rotary_dim` is even, positive and at most `head_dim`; the last
       dimension of `cos` is `rotary_dim / 2`.
    3. With `positions`: `cos` is 2-D and `positions` is `[batch, seq]` of
       `input`. Without: `cos` is `[batch, seq, rotary_dim / 2]`, or
       `[1, seq, rotary_dim / 2]` shared by every batch row.
    4. The result has the input's type.

    Example:

    ```mlir
    %q = dfg.rotary %x, %cos, %sin, %pos interleaved = false rotary_dim = 8
      : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<1x8xi64>)
        -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins Dfg_FloatTensor:$input, Dfg_FloatTensor:$cos,
                       Dfg_FloatTensor:$sin,
                       Optional<RankedTensorOf<[I64]>>:$positions,
                       BoolAttr:$interleaved, I64Attr:$rotary_dim);
  let results = (outs Dfg_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin (`,` $positions^)? `interleaved` `=` $interleaved
    `rotary_dim` `=` $rotary_dim attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

class Dfg_NormOp<string mnemonic, string formula, string onnxName>
    : Dfg_InferredOp<mnemonic, !listconcat([AttrSizedOperandSegments], Dfg_InputShapedRules)> {
  let description = [{
    Normalises over the trailing dimensions `[axis, rank)`:
    `result = }] # formula # [{`, with the statistics accumulated in f32 or
    wider. `scale` (and `bias`, when present) have the shape of the
    normalised dimensions, or broadcast to it. (ONNX }] # onnxName # [{.)

    With a fused `residual`, `x = input + residual` is normalised and also
    returned as the second result `sum`: the pre-norm transformer's
    `h = h + sublayer(h); y = norm(h)` in one op (com.microsoft
    SkipLayerNormalization / SkipSimplifiedLayerNormalization).

    Invariants:
    1. The input is a floating-point tensor of rank at least 1; `scale`,
       `bias`, `residual` and the results share its element type.
    2. `axis` lies in `[-rank, rank)`; `epsilon` is non-negative (0 where
       an exporter folded it away: the statistic is then taken as it is).
    3. `scale` (and `bias`) broadcast to the normalised dimensions.
    4. The result has the input's shape.
    5. `residual` has the input's shape, and comes with exactly one `sum`
       result of that shape; without it there is no `sum`.

    Example:

    ```mlir
    %y = dfg.}] # mnemonic # [{ %x, %g axis = -1 epsilon = 1.0e-05
           : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %n, %h = dfg.}] # mnemonic # [{ %x, %g residual(%r) axis = -1 epsilon = 1.0e-05
           : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<2x8x64xf32>)
             -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>)
    ```
  }];
  let results = (outs Dfg_FloatTensor:$result, Variadic<Dfg_FloatTensor>:$sum);
  let extraClassDefinition = inferredOpDefinitions # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::meshc::dfg::inferNormalization(
          loc, getOperationName(), adaptor.getInput(), adaptor.getScale(),
          adaptor.getBias(), adaptor.getResidual(),
          static_cast<int64_t>(adaptor.getAxis()),
          adaptor.getEpsilon().convertToDouble(), types);
    }
  }];
}

def Dfg_LayerNormOp : Dfg_NormOp<"layer_norm",
    "(x - mean(x)) / sqrt(var(x) + epsilon) * scale + bias",
    "LayerNormalization-17"> {
  let summary = "Layer normalisation over the trailing dimensions";
  let arguments = (ins Dfg_FloatTensor:$input, Dfg_FloatTensor:$scale,
                       Optional<Dfg_FloatTensor>:$bias,
                       Optional<Dfg_FloatTensor>:$residual, I64Attr:$axis,
                       F32Attr:$epsilon);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? (`residual` `(` $residual^ `)`)?
    `axis` `=` $axis `epsilon` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
}

def Dfg_RmsNormOp : Dfg_NormOp<"rms_norm",
    "x / sqrt(mean(x * x) + epsilon) * scale",
    "RMSNormalization-23"> {
  let summary = "Root-mean-square normalisation over the trailing dimensions";
  let arguments = (ins Dfg_FloatTensor:$input, Dfg_FloatTensor:$scale,
                       Optional<Dfg_FloatTensor>:$bias,
                       Optional<Dfg_FloatTensor>:$residual, I64Attr:$axis,
                       F32Attr:$epsilon);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? (`residual` `(` $residual^ `)`)?
    `axis` `=` $axis `epsilon` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
}

def Dfg_SoftmaxOp : Dfg_InferredOp<"softmax",
    !listconcat([SameOperandsAndResultElementType], Dfg_InputShapedRules)> {
  let summary = "Softmax along one axis (ONNX Softmax, opset 13 and later)";
  let description = [{
    `result = exp(x - max(x)) / sum(exp(x - max(x)))`, with max and sum taken
    along `axis` only. A negative `axis` counts from the last dimension.

    Invariants:
    1. The element type is a floating-point type.
    2. `axis` lies in `[-rank, rank)` and the input has rank at least 1.
    3. The result has the input's shape.

    Example:

    ```mlir
    %p = dfg.softmax %s axis = -1 : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Dfg_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Dfg_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis attr-dict `:` functional-type($input, $result)
  }];
  let extraClassDeclaration = inferredOpDeclarations # [{
    /// `axis` as a non-negative dimension index.
    int64_t getNormalizedAxis() {
      int64_t axis = static_cast<int64_t>(getAxis());
      return axis < 0 ? axis + getType().getRank() : axis;
    }
  }];
}

include "dialects/dfg/IR/DfgSymbolicOps.td"
include "dialects/dfg/IR/DfgFusedOps.td"

#endif // MESHC_DIALECTS_DFG_IR_DFGOPS_TD
