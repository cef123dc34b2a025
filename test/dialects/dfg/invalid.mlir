// RUN: meshc-opt %s --split-input-file --verify-diagnostics

// One negative test per numbered invariant in DfgOps.td, named
// <op>_invariant_<n>. Invariants enforced by ODS type constraints have a test
// too, so that loosening a constraint is caught.

func.func @weight_invariant_1() -> tensor<?x4xf32> {
  // expected-error @+1 {{'dfg.weight' op weight 'w' must have a static shape, got 'tensor<?x4xf32>'}}
  %w = dfg.weight "w" in "w.bin" [offset = 0, length = 16] : tensor<?x4xf32>
  return %w : tensor<?x4xf32>
}

// -----

func.func @weight_invariant_2() -> tensor<4xf32> {
  // expected-error @+1 {{weight 'w' has negative offset -8}}
  %w = dfg.weight "w" in "w.bin" [offset = -8, length = 16] : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @weight_invariant_3() -> tensor<4x4xf16> {
  // expected-error @+1 {{weight 'w' has length 64 bytes but 'tensor<4x4xf16>' needs 32}}
  %w = dfg.weight "w" in "w.bin" [offset = 0, length = 64] : tensor<4x4xf16>
  return %w : tensor<4x4xf16>
}

// -----

func.func @weight_invariant_3_bool() -> tensor<5xi1> {
  // expected-error @+1 {{weight 'm' has length 40 bytes but 'tensor<5xi1>' needs 5}}
  %w = dfg.weight "m" in "w.bin" [offset = 0, length = 40] : tensor<5xi1>
  return %w : tensor<5xi1>
}

// -----

func.func @weight_invariant_4_empty() -> tensor<4xf32> {
  // expected-error @+1 {{weight 'w' has an empty file path}}
  %w = dfg.weight "w" in "" [offset = 0, length = 16] : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @weight_invariant_4_absolute() -> tensor<4xf32> {
  // expected-error @+1 {{weight 'w' refers to '/etc/w.bin', which leaves the model's folder}}
  %w = dfg.weight "w" in "/etc/w.bin" [offset = 0, length = 16] : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @weight_invariant_4_dotdot() -> tensor<4xf32> {
  // expected-error @+1 {{weight 'w' refers to 'data/../../w.bin', which leaves the model's folder}}
  %w = dfg.weight "w" in "data/../../w.bin" [offset = 0, length = 16] : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @weight_invariant_6_bits() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' has 3-bit elements (2, 4 or 8)}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] {quantization = {bits = 3 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_invariant_6_columns() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' has block size 32 and 48 columns, which must be positive and divide its 4096 elements}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 48 : i64, row_bytes = 32 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_invariant_6_row_bytes() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' has rows of 16 bytes, too few for 64 4-bit elements}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 1024] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 16 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_invariant_3_quantized() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' has length 1024 where its 64 rows of 32 bytes need 2048}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 1024] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_invariant_6_scales() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' has scales at offset 2048 of length 256 where 512 bytes are needed}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 256 : i64, type = f32}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_invariant_6_zero_points() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' has zero points of a type other than ui8 (packed as its elements)}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}, zero_points = {file = "w.bin", offset = 0 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_invariant_6_stored() -> tensor<64x64xf16> {
  // expected-error @+1 {{quantized weight 'q' is both quantized and stored as a floating-point type}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] stored f32 {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xf16>
  return %w : tensor<64x64xf16>
}

// -----

func.func @weight_invariant_6_integer() -> tensor<64x64xi32> {
  // expected-error @+1 {{quantized weight 'q' is quantized but not floating-point}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xi32>
  return %w : tensor<64x64xi32>
}

// -----

func.func @weight_invariant_6_missing() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' quantization needs the integer 'row_bytes'}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_invariant_6_block_rows() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' has 0 rows to a block, which must be positive}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, block_rows = 0 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_invariant_6_zero_point_rows() -> tensor<64x64xf32> {
  // expected-error @+1 {{quantized weight 'q' has rows of 4 bits of zero points for 2 blocks of 4 bits (too few, too many, or not whole elements)}}
  %w = dfg.weight "q" in "w.bin" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "w.bin", offset = 2048 : i64, length = 512 : i64, type = f32}, zero_point_row_bits = 4 : i64, zero_points = {file = "w.bin", offset = 0 : i64, length = 32 : i64, type = ui8}}} : tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

func.func @weight_element_type() -> tensor<4xf64> {
  // expected-error @+1 {{'dfg.weight' op result #0 must be ranked tensor of}}
  %w = dfg.weight "w" in "w.bin" [offset = 0, length = 32] : tensor<4xf64>
  return %w : tensor<4xf64>
}

// -----

func.func @constant_invariant_1() -> tensor<65537xf32> {
  // A non-splat value (an elided resource blob) of 65537 elements.
  // expected-error @+1 {{'dfg.constant' op holds 65537 elements; literal constants hold at most 65536 (use dfg.weight for larger tensors)}}
  %c = dfg.constant dense_resource<__elided__> : tensor<65537xf32>
  return %c : tensor<65537xf32>
}

// -----

func.func @constant_invariant_2() -> tensor<2xi64> {
  // expected-error @+1 {{'dfg.constant' op failed to verify that all of {value, result} have same type}}
  %c = "dfg.constant"() {value = dense<[1, 2]> : tensor<2xi32>} : () -> tensor<2xi64>
  return %c : tensor<2xi64>
}

// -----

func.func @matmul_invariant_1_rank(%a: tensor<f32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.matmul' op matmul operands must have rank at least 1, got scalar and 4}}
  %0 = dfg.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @matmul_invariant_1_element_type(%a: tensor<2x4xf32>, %b: tensor<4x3xf16>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dfg.matmul' op requires the same element type for all operands and results}}
  %0 = dfg.matmul %a, %b : (tensor<2x4xf32>, tensor<4x3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @matmul_invariant_2(%a: tensor<2x4xf32>, %b: tensor<5x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dfg.matmul' op contracting dimensions differ: lhs 2x4 has K = 4, rhs 5x3 has K = 5}}
  %0 = dfg.matmul %a, %b : (tensor<2x4xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @matmul_invariant_3(%a: tensor<2x8x4xf32>, %b: tensor<3x4x5xf32>) -> tensor<2x8x5xf32> {
  // expected-error @+1 {{'dfg.matmul' op matmul batch dimensions: shapes 2 and 3 do not broadcast}}
  %0 = dfg.matmul %a, %b : (tensor<2x8x4xf32>, tensor<3x4x5xf32>) -> tensor<2x8x5xf32>
  return %0 : tensor<2x8x5xf32>
}

// -----

func.func @matmul_invariant_4(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'dfg.matmul' op result type 'tensor<3x2xf32>' contradicts the inferred 'tensor<2x3xf32>'}}
  %0 = dfg.matmul %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @matmul_bool(%a: tensor<2x4xi1>, %b: tensor<4x3xi1>) -> tensor<2x3xi1> {
  // expected-error @+1 {{'dfg.matmul' op operand #0 must be ranked tensor of}}
  %0 = dfg.matmul %a, %b : (tensor<2x4xi1>, tensor<4x3xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

func.func @add_invariant_1(%a: tensor<4xf32>, %b: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.add' op requires the same element type for all operands and results}}
  %0 = dfg.add %a, %b : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sub_invariant_2(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dfg.sub' op shapes 2x3 and 4x3 do not broadcast: dimension 2 from the end is 2 vs 4}}
  %0 = dfg.sub %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mul_invariant_3(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dfg.mul' op result type 'tensor<3xf32>' contradicts the inferred 'tensor<2x3xf32>'}}
  %0 = dfg.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @div_unranked(%a: tensor<*xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dfg.div' op operand #0 must be ranked tensor of}}
  %0 = dfg.div %a, %b : (tensor<*xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reshape_invariant_1_below_minus_one(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'dfg.reshape' op reshape entry 0 is -2; entries must be at least -1}}
  %0 = dfg.reshape %x to [-2, 2] : (tensor<4xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @reshape_invariant_1_two_inferred(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'dfg.reshape' op reshape entries 0 and 1 are both -1; at most one dimension can be inferred}}
  %0 = dfg.reshape %x to [-1, -1] : (tensor<4xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @reshape_invariant_2(%x: tensor<4xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'dfg.reshape' op reshape entry 1 is 0 (copy), but the input 4 has only 1 dimension(s)}}
  %0 = dfg.reshape %x to [4, 0] : (tensor<4xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

func.func @reshape_invariant_3_count(%x: tensor<2x3xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'dfg.reshape' op cannot reshape 2x3 (6 elements) to 5 (5 elements)}}
  %0 = dfg.reshape %x to [5] : (tensor<2x3xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @reshape_invariant_3_indivisible(%x: tensor<2x3xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{'dfg.reshape' op cannot reshape 2x3 (6 elements) to 4x?: the -1 entry does not divide evenly}}
  %0 = dfg.reshape %x to [4, -1] : (tensor<2x3xf32>) -> tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

func.func @reshape_invariant_4(%x: tensor<2x6xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'dfg.reshape' op result type 'tensor<4x3xf32>' contradicts the inferred 'tensor<3x4xf32>'}}
  %0 = dfg.reshape %x to [3, 4] : (tensor<2x6xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @transpose_invariant_1(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'dfg.transpose' op permutation has 3 entries but the input 2x3 has rank 2}}
  %0 = dfg.transpose %x perm = [1, 0, 2] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_invariant_2(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'dfg.transpose' op perm entry 1 is 1; perm must be a permutation of [0, 2)}}
  %0 = dfg.transpose %x perm = [1, 1] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_invariant_3(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dfg.transpose' op result type 'tensor<2x3xf32>' contradicts the inferred 'tensor<3x2xf32>'}}
  %0 = dfg.transpose %x perm = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @softmax_invariant_1(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'dfg.softmax' op operand #0 must be ranked tensor of}}
  %0 = dfg.softmax %x axis = 0 : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @softmax_invariant_2(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dfg.softmax' op axis 2 is out of range for an input of rank 2 (expected [-2, 2))}}
  %0 = dfg.softmax %x axis = 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @softmax_invariant_2_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'dfg.softmax' op axis -1 is out of range for an input of rank 0 (expected [0, 0))}}
  %0 = dfg.softmax %x axis = -1 : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @softmax_invariant_3(%x: tensor<2x4xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'dfg.softmax' op result type 'tensor<2x5xf32>' contradicts the inferred 'tensor<2x4xf32>'}}
  %0 = dfg.softmax %x axis = 1 : (tensor<2x4xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @and_not_bool(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'dfg.and' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = dfg.and %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @bitwise_and_float(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.bitwise_and' op operand #0 must be ranked tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = dfg.bitwise_and %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @bitwise_or_mixed(%a: tensor<4xi64>, %b: tensor<4xi32>) -> tensor<4xi64> {
  // expected-error @+1 {{'dfg.bitwise_or' op requires the same element type for all operands and results}}
  %0 = dfg.bitwise_or %a, %b : (tensor<4xi64>, tensor<4xi32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @pow_invariant_2(%a: tensor<3xf32>, %b: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dfg.pow' op shapes 3 and 4 do not broadcast}}
  %0 = dfg.pow %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @equal_invariant_1_operands(%a: tensor<4xi64>, %b: tensor<4xi32>) -> tensor<4xi1> {
  // expected-error @+1 {{'dfg.equal' op requires the same element type for all operands}}
  %0 = dfg.equal %a, %b : (tensor<4xi64>, tensor<4xi32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @less_invariant_1_result(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'dfg.less' op result #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = dfg.less %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @greater_invariant_2(%a: tensor<4xi64>, %b: tensor<5xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{'dfg.greater' op shapes 4 and 5 do not broadcast}}
  %0 = dfg.greater %a, %b : (tensor<4xi64>, tensor<5xi64>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @less_or_equal_invariant_3(%a: tensor<4x1xi64>, %b: tensor<5xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{'dfg.less_or_equal' op result type 'tensor<4xi1>' contradicts the inferred 'tensor<4x5xi1>'}}
  %0 = dfg.less_or_equal %a, %b : (tensor<4x1xi64>, tensor<5xi64>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @where_invariant_1_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.where' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = dfg.where %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @where_invariant_1_values(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.where' op selected operands have different element types: 'tensor<4xf32>' vs 'tensor<4xf16>'}}
  %0 = dfg.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @where_invariant_2(%c: tensor<3xi1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.where' op shapes 3 and 4 do not broadcast}}
  %0 = dfg.where %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @where_invariant_3(%c: tensor<2x1xi1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.where' op result type 'tensor<4xf32>' contradicts the inferred 'tensor<2x4xf32>'}}
  %0 = dfg.where %c, %a, %a : (tensor<2x1xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cast_invariant_1(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'dfg.cast' op result #0 must be ranked tensor of}}
  %0 = dfg.cast %x to f64 : (tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @cast_invariant_1_attr(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.cast' op cannot cast to 'f64'; dfg element types are f32, f16, bf16, i64, i32, i1}}
  %0 = dfg.cast %x to f64 : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cast_invariant_2(%x: tensor<4xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{'dfg.cast' op result type 'tensor<4xi32>' contradicts the inferred 'tensor<4xf16>'}}
  %0 = dfg.cast %x to f16 : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sqrt_invariant_1(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'dfg.sqrt' op operand #0 must be ranked tensor of}}
  %0 = dfg.sqrt %x : (tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @exp_invariant_2(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'dfg.exp' op result type 'tensor<5xf32>' contradicts the inferred 'tensor<4xf32>'}}
  %0 = dfg.exp %x : (tensor<4xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @not_invariant_1(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.not' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = dfg.not %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unsqueeze_invariant_1(%x: tensor<2x8xf32>) -> tensor<2x8x1xf32> {
  // expected-error @+1 {{'dfg.unsqueeze' op axis 3 is out of range for rank 3 (expected [-3, 3))}}
  %0 = dfg.unsqueeze %x axes = [3] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
  return %0 : tensor<2x8x1xf32>
}

// -----

func.func @unsqueeze_invariant_1_repeat(%x: tensor<8xf32>) -> tensor<1x1x8xf32> {
  // expected-error @+1 {{'dfg.unsqueeze' op axis 0 is given more than once}}
  %0 = dfg.unsqueeze %x axes = [0, -3] : (tensor<8xf32>) -> tensor<1x1x8xf32>
  return %0 : tensor<1x1x8xf32>
}

// -----

func.func @unsqueeze_invariant_2(%x: tensor<2x8xf32>) -> tensor<2x8x1xf32> {
  // expected-error @+1 {{'dfg.unsqueeze' op result type 'tensor<2x8x1xf32>' contradicts the inferred 'tensor<1x2x8xf32>'}}
  %0 = dfg.unsqueeze %x axes = [0] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
  return %0 : tensor<2x8x1xf32>
}

// -----

func.func @squeeze_invariant_1(%x: tensor<1x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dfg.squeeze' op axis 2 is out of range for rank 2}}
  %0 = dfg.squeeze %x axes = [2] : (tensor<1x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @squeeze_invariant_2(%x: tensor<2x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dfg.squeeze' op cannot squeeze dimension 0 of 2x8: its size is 2, not 1}}
  %0 = dfg.squeeze %x axes = [0] : (tensor<2x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @squeeze_invariant_3(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  // expected-error @+1 {{'dfg.squeeze' op result type 'tensor<1x8xf32>' contradicts the inferred 'tensor<8xf32>'}}
  %0 = dfg.squeeze %x axes = [0] : (tensor<1x8xf32>) -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

func.func @concat_invariant_1(%a: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.concat' op concat input 1 has rank 1, input 0 has rank 2}}
  %0 = dfg.concat %a, %b axis = 0 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @concat_invariant_2(%a: tensor<2x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.concat' op axis 2 is out of range for rank 2}}
  %0 = dfg.concat %a, %a axis = 2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @concat_invariant_3(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.concat' op concat input 1 (2x4) differs from the others in dimension 1, which is not the concatenation axis 0}}
  %0 = dfg.concat %a, %b axis = 0 : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gather_invariant_1(%w: tensor<16x8xf32>, %ids: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = dfg.gather %w, %ids axis = 0 : (tensor<16x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gather_invariant_2(%w: tensor<16x8xf32>, %ids: tensor<4xi64>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.gather' op axis 2 is out of range for rank 2}}
  %0 = dfg.gather %w, %ids axis = 2 : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gather_invariant_3(%w: tensor<16x8xf32>, %ids: tensor<4xi64>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.gather' op result type 'tensor<4x8xf32>' contradicts the inferred 'tensor<16x4xf32>'}}
  %0 = dfg.gather %w, %ids axis = 1 : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @slice_invariant_1(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.slice' op slice has 1 starts, 2 ends, 1 axes and 1 steps; all must have the same length}}
  %0 = dfg.slice %x starts = [0] ends = [4, 4] axes = [0] steps = [1] : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @slice_invariant_2_step(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.slice' op slice step for axis 0 is 0}}
  %0 = dfg.slice %x starts = [0] ends = [4] axes = [0] steps = [0] : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @slice_invariant_2_repeat(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dfg.slice' op axis 0 is sliced more than once}}
  %0 = dfg.slice %x starts = [0, 0] ends = [4, 2] axes = [0, -1] steps = [1, 1] : (tensor<8xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @slice_invariant_3(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.slice' op result type 'tensor<4xf32>' contradicts the inferred 'tensor<3xf32>'}}
  %0 = dfg.slice %x starts = [5] ends = [100] axes = [0] steps = [1] : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @split_invariant_1(%x: tensor<8xf32>) -> (tensor<9xf32>, tensor<0xf32>) {
  // expected-error @+1 {{'dfg.split' op split size -1 is negative}}
  %0:2 = dfg.split %x axis = 0 sizes = [9, -1] : (tensor<8xf32>) -> (tensor<9xf32>, tensor<0xf32>)
  return %0#0, %0#1 : tensor<9xf32>, tensor<0xf32>
}

// -----

func.func @split_invariant_2(%x: tensor<8xf32>) -> (tensor<4xf32>, tensor<5xf32>) {
  // expected-error @+1 {{'dfg.split' op split sizes add up to 9 but dimension 0 of 'tensor<8xf32>' is 8}}
  %0:2 = dfg.split %x axis = 0 sizes = [4, 5] : (tensor<8xf32>) -> (tensor<4xf32>, tensor<5xf32>)
  return %0#0, %0#1 : tensor<4xf32>, tensor<5xf32>
}

// -----

func.func @split_invariant_3(%x: tensor<8xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
  // expected-error @+1 {{'dfg.split' op result types 'tensor<4xf32>', 'tensor<3xf32>' contradict the inferred 'tensor<4xf32>', 'tensor<4xf32>'}}
  %0:2 = dfg.split %x axis = 0 sizes = [4, 4] : (tensor<8xf32>) -> (tensor<4xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<4xf32>, tensor<3xf32>
}

// -----

func.func @expand_invariant_1(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dfg.expand' op expand target -2x8 has a negative dimension}}
  %0 = dfg.expand %x shape = [-2, 8] : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @expand_invariant_2(%x: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dfg.expand' op shapes 3 and 2x4 do not broadcast}}
  %0 = dfg.expand %x shape = [2, 4] : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @reduce_mean_invariant_1(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.reduce_mean' op axes [1, 0] must be distinct, increasing and in [0, 2)}}
  %0 = dfg.reduce_mean %x axes = [1, 0] keep_dims = false : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_sum_invariant_2(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.reduce_sum' op result type 'tensor<4xf32>' contradicts the inferred 'tensor<4x1xf32>'}}
  %0 = dfg.reduce_sum %x axes = [1] keep_dims = true : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_max_bool(%x: tensor<4xi1>) -> tensor<i1> {
  // expected-error @+1 {{'dfg.reduce_max' op operand #0 must be ranked tensor of}}
  %0 = dfg.reduce_max %x axes = [0] keep_dims = false : (tensor<4xi1>) -> tensor<i1>
  return %0 : tensor<i1>
}

// -----

func.func @cumsum_invariant_1(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'dfg.cumsum' op operand #0 must be ranked tensor of}}
  %0 = dfg.cumsum %x axis = 0 exclusive = false reverse = false : (tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @cumsum_invariant_2(%x: tensor<2x4xi64>) -> tensor<2x4xi64> {
  // expected-error @+1 {{'dfg.cumsum' op axis -3 is out of range for an input of rank 2 (expected [-2, 2))}}
  %0 = dfg.cumsum %x axis = -3 exclusive = false reverse = false : (tensor<2x4xi64>) -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

func.func @cumsum_invariant_3(%x: tensor<2x4xi64>) -> tensor<2x4xi32> {
  // expected-error @+1 {{'dfg.cumsum' op}}
  %0 = dfg.cumsum %x axis = 0 exclusive = false reverse = false : (tensor<2x4xi64>) -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
}

// -----

func.func @trilu_invariant_1(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dfg.trilu' op needs rank at least 2, got 'tensor<8xf32>'}}
  %0 = dfg.trilu %x upper = true diagonal = 0 : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @scatter_nd_invariant_1(%d: tensor<4x8xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.scatter_nd' op indices 'tensor<2x3xi64>' must end in a static index length of at most the data rank 2 less batch_dims 0}}
  %0 = dfg.scatter_nd %d, %i, %u : (tensor<4x8xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @scatter_nd_invariant_1_batch_dims(%d: tensor<4x8xf32>, %i: tensor<4x1xi64>, %u: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.scatter_nd' op batch_dims 2 must lie in [0, rank(indices) - 1] for indices 'tensor<4x1xi64>'}}
  %0 = dfg.scatter_nd %d, %i, %u batch_dims = 2 : (tensor<4x8xf32>, tensor<4x1xi64>, tensor<4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @scatter_nd_invariant_1_batch_sizes(%d: tensor<4x8xf32>, %i: tensor<3x1xi64>, %u: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.scatter_nd' op the 1 batch dimensions of data 'tensor<4x8xf32>' and indices 'tensor<3x1xi64>' differ}}
  %0 = dfg.scatter_nd %d, %i, %u batch_dims = 1 : (tensor<4x8xf32>, tensor<3x1xi64>, tensor<3xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @scatter_nd_invariant_1_batch_and_q(%d: tensor<4x8xf32>, %i: tensor<4x2xi64>, %u: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.scatter_nd' op indices 'tensor<4x2xi64>' must end in a static index length of at most the data rank 2 less batch_dims 1}}
  %0 = dfg.scatter_nd %d, %i, %u batch_dims = 1 : (tensor<4x8xf32>, tensor<4x2xi64>, tensor<4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @scatter_nd_invariant_2(%d: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dfg.scatter_nd' op updates 'tensor<2x4xf32>' should have shape 2x8}}
  %0 = dfg.scatter_nd %d, %i, %u : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_invariant_1(%x: tensor<2x64xf32>, %g: tensor<64xf16>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'dfg.layer_norm' op parameter 'tensor<64xf16>' does not match the input's element type}}
  %0 = dfg.layer_norm %x, %g axis = -1 epsilon = 1.0e-05 : (tensor<2x64xf32>, tensor<64xf16>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @layer_norm_invariant_2_axis(%x: tensor<2x64xf32>, %g: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'dfg.layer_norm' op axis 2 is out of range for rank 2}}
  %0 = dfg.layer_norm %x, %g axis = 2 epsilon = 1.0e-05 : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @rms_norm_invariant_2_epsilon(%x: tensor<2x64xf32>, %g: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'dfg.rms_norm' op epsilon must be non-negative, got -1.000000e-05}}
  %0 = dfg.rms_norm %x, %g axis = -1 epsilon = -1.0e-05 : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @rms_norm_invariant_3(%x: tensor<2x64xf32>, %g: tensor<32xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'dfg.rms_norm' op parameter 'tensor<32xf32>' does not broadcast to the normalised dimensions 64}}
  %0 = dfg.rms_norm %x, %g axis = -1 epsilon = 1.0e-06 : (tensor<2x64xf32>, tensor<32xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @layer_norm_invariant_4(%x: tensor<2x64xf32>, %g: tensor<64xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'dfg.layer_norm' op result type 'tensor<2x32xf32>' contradicts the inferred 'tensor<2x64xf32>'}}
  %0 = dfg.layer_norm %x, %g axis = -1 epsilon = 1.0e-05 : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @gelu_invariant_1(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'dfg.gelu' op operand #0 must be ranked tensor of}}
  %0 = dfg.gelu %x exact = true : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @gelu_invariant_2(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'dfg.gelu' op requires the same element type for all operands and results}}
  %0 = dfg.gelu %x exact = true : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @rotary_invariant_1(%x: tensor<4x8x8xf32>, %c: tensor<16x4xf32>, %p: tensor<4x8xi64>) -> tensor<4x8x8xf32> {
  // expected-error @+1 {{'dfg.rotary' op input 'tensor<4x8x8xf32>' must be [batch, heads, seq, head_dim]}}
  %0 = dfg.rotary %x, %c, %c, %p interleaved = false rotary_dim = 8 : (tensor<4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<4x8xi64>) -> tensor<4x8x8xf32>
  return %0 : tensor<4x8x8xf32>
}

// -----

func.func @rotary_invariant_1_tables(%x: tensor<1x4x8x8xf32>, %c: tensor<16x4xf32>, %s: tensor<16x4xf16>, %p: tensor<1x8xi64>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.rotary' op cos 'tensor<16x4xf32>' and sin 'tensor<16x4xf16>' must share one type with the input's element type}}
  %0 = dfg.rotary %x, %c, %s, %p interleaved = false rotary_dim = 8 : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf16>, tensor<1x8xi64>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @rotary_invariant_2(%x: tensor<1x4x8x8xf32>, %c: tensor<16x4xf32>, %p: tensor<1x8xi64>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.rotary' op rotary_dim 10 must be even, positive and at most head_dim 8}}
  %0 = dfg.rotary %x, %c, %c, %p interleaved = false rotary_dim = 10 : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<1x8xi64>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @rotary_invariant_2_half(%x: tensor<1x4x8x8xf32>, %c: tensor<16x3xf32>, %p: tensor<1x8xi64>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.rotary' op cos 'tensor<16x3xf32>' must end in rotary_dim / 2 = 4}}
  %0 = dfg.rotary %x, %c, %c, %p interleaved = false rotary_dim = 8 : (tensor<1x4x8x8xf32>, tensor<16x3xf32>, tensor<16x3xf32>, tensor<1x8xi64>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @rotary_invariant_3_positions(%x: tensor<1x4x8x8xf32>, %c: tensor<16x4xf32>, %p: tensor<1x7xi64>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.rotary' op with positions 'tensor<1x7xi64>', cos must be [max_position, rotary_dim / 2] and positions [batch, seq] = 1x8}}
  %0 = dfg.rotary %x, %c, %c, %p interleaved = false rotary_dim = 8 : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<1x7xi64>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @rotary_invariant_3_cached(%x: tensor<1x4x8x8xf32>, %c: tensor<16x4xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.rotary' op without positions, cos 'tensor<16x4xf32>' must be [batch, seq, rotary_dim / 2] = 1x8x4}}
  %0 = dfg.rotary %x, %c, %c interleaved = false rotary_dim = 8 : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @rotary_invariant_4(%x: tensor<1x4x8x8xf32>, %c: tensor<16x4xf32>, %p: tensor<1x8xi64>) -> tensor<1x4x8x4xf32> {
  // expected-error @+1 {{'dfg.rotary' op result type 'tensor<1x4x8x4xf32>' contradicts the inferred 'tensor<1x4x8x8xf32>'}}
  %0 = dfg.rotary %x, %c, %c, %p interleaved = false rotary_dim = 8 : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<1x8xi64>) -> tensor<1x4x8x4xf32>
  return %0 : tensor<1x4x8x4xf32>
}

// -----

func.func @attention_invariant_1(%q: tensor<4x8x8xf32>, %k: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op query, key, value and past tensors must be 4-D of one element type, got 'tensor<4x8x8xf32>' with query 'tensor<4x8x8xf32>'}}
  %0 = dfg.attention %q, %k, %k scale = 1.0 causal = false : (tensor<4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_2(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x4xf32>) -> tensor<1x4x8x4xf32> {
  // expected-error @+1 {{'dfg.attention' op query 'tensor<1x4x8x8xf32>', key 'tensor<1x2x8x4xf32>' and value 'tensor<1x2x8x4xf32>' disagree in batch, head_dim, kv_heads or kv_seq}}
  %0 = dfg.attention %q, %k, %k scale = 1.0 causal = false : (tensor<1x4x8x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x4x8x4xf32>
  return %0 : tensor<1x4x8x4xf32>
}

// -----

func.func @attention_invariant_3(%q: tensor<1x4x8x8xf32>, %k: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op 3 kv heads do not divide 4 query heads}}
  %0 = dfg.attention %q, %k, %k scale = 1.0 causal = false : (tensor<1x4x8x8xf32>, tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_4_scale(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op scale must be positive and softcap not negative, got 0.000000e+00 and 0.000000e+00}}
  %0 = dfg.attention %q, %k, %k scale = 0.0 causal = false : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_8_lengths_without_past(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %l: tensor<1xi64>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op past_lengths 'tensor<1xi64>' must be a 1-D i64 tensor of the batch's size 1, given with a past}}
  %0 = dfg.attention %q, %k, %k past_lengths(%l) scale = 0.5 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1xi64>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_8_lengths_of_other_batch(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %p: tensor<1x2x3x8xf32>, %l: tensor<2xi64>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op past_lengths 'tensor<2xi64>' must be a 1-D i64 tensor of the batch's size 1}}
  %0:3 = dfg.attention %q, %k, %k past(%p, %p) past_lengths(%l) scale = 0.5 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<2xi64>) -> (tensor<1x4x8x8xf32>, tensor<1x2x11x8xf32>, tensor<1x2x11x8xf32>)
  return %0#0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_9_sinks_per_head(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %s: tensor<2xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op sinks 'tensor<2xf32>' must be a 1-D tensor of the query's element type and its 4 heads}}
  %0 = dfg.attention %q, %k, %k sinks(%s) scale = 0.5 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<2xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_7_fill_without_causal(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op causal_fill needs causal = true and a finite value at most -1e30, got -3.402823e+38 without causal}}
  %0 = dfg.attention %q, %k, %k scale = 0.5 causal = false {causal_fill = -3.40282347E+38 : f32} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_7_small_fill(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op causal_fill needs causal = true and a finite value at most -1e30, got -1.000000e+04}}
  %0 = dfg.attention %q, %k, %k scale = 0.5 causal = true {causal_fill = -1.0e4 : f32} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_4_present(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %p: tensor<1x2x2x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op has 1 result(s), but its operands give 3: 'tensor<1x4x8x8xf32>', 'tensor<1x2x10x8xf32>', 'tensor<1x2x10x8xf32>'}}
  %0 = dfg.attention %q, %k, %k past(%p, %p) scale = 1.0 causal = false : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_5(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %m: tensor<8x7xi1>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op mask 'tensor<8x7xi1>' does not broadcast to 1x4x8x8}}
  %0 = dfg.attention %q, %k, %k mask(%m) scale = 1.0 causal = false : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<8x7xi1>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_1_mask_type(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %m: tensor<8x8xi64>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op mask 'tensor<8x8xi64>' must be bool or of the query's element type}}
  %0 = dfg.attention %q, %k, %k mask(%m) scale = 1.0 causal = false : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<8x8xi64>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @attention_invariant_6(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'dfg.attention' op result type 'tensor<1x4x8x8xf32>' contradicts the inferred 'tensor<1x4x8x16xf32>'}}
  %0 = dfg.attention %q, %k, %v scale = 1.0 causal = false : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @layer_norm_invariant_5(%x: tensor<2x64xf32>, %g: tensor<64xf32>, %r: tensor<1x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'dfg.layer_norm' op residual 'tensor<1x64xf32>' must have the input's type 'tensor<2x64xf32>'}}
  %0, %1 = dfg.layer_norm %x, %g residual(%r) axis = -1 epsilon = 1.0e-05 : (tensor<2x64xf32>, tensor<64xf32>, tensor<1x64xf32>) -> (tensor<2x64xf32>, tensor<2x64xf32>)
  return %0 : tensor<2x64xf32>
}

// -----

func.func @rms_norm_invariant_5_sum(%x: tensor<2x64xf32>, %g: tensor<64xf32>, %r: tensor<2x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'dfg.rms_norm' op has 1 result(s), but its operands give 2: 'tensor<2x64xf32>', 'tensor<2x64xf32>'}}
  %0 = dfg.rms_norm %x, %g residual(%r) axis = -1 epsilon = 1.0e-05 : (tensor<2x64xf32>, tensor<64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @embedding_invariant_1(%t: tensor<64xf32>, %ids: tensor<8xi64>) -> tensor<8x1xf32> {
  // expected-error @+1 {{'dfg.embedding' op table 'tensor<64xf32>' must be [vocab, hidden]}}
  %0 = dfg.embedding %t, %ids : (tensor<64xf32>, tensor<8xi64>) -> tensor<8x1xf32>
  return %0 : tensor<8x1xf32>
}

// -----

func.func @embedding_invariant_2(%t: tensor<64x32xf32>, %ids: tensor<8xi64>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'dfg.embedding' op result type 'tensor<8x16xf32>' contradicts the inferred 'tensor<8x32xf32>'}}
  %0 = dfg.embedding %t, %ids : (tensor<64x32xf32>, tensor<8xi64>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @linear_invariant_1(%x: tensor<2x32xf32>, %w: tensor<32x96xf16>) -> tensor<2x96xf32> {
  // expected-error @+1 {{'dfg.linear' op operands must share the input's element type 'f32'}}
  %0 = dfg.linear %x, %w transpose_weight = false : (tensor<2x32xf32>, tensor<32x96xf16>) -> tensor<2x96xf32>
  return %0 : tensor<2x96xf32>
}

// -----

func.func @linear_invariant_2(%x: tensor<2x32xf32>, %w: tensor<32x96xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'dfg.linear' op input 'tensor<2x32xf32>' does not match the weight 'tensor<32x96xf32>' stored [out, in]: 32 vs 96}}
  %0 = dfg.linear %x, %w transpose_weight = true : (tensor<2x32xf32>, tensor<32x96xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @linear_invariant_3(%x: tensor<2x32xf32>, %w: tensor<32x96xf32>, %b: tensor<32xf32>) -> tensor<2x96xf32> {
  // expected-error @+1 {{'dfg.linear' op bias 'tensor<32xf32>' must be [96], the weight's out dimension}}
  %0 = dfg.linear %x, %w, %b transpose_weight = false : (tensor<2x32xf32>, tensor<32x96xf32>, tensor<32xf32>) -> tensor<2x96xf32>
  return %0 : tensor<2x96xf32>
}

// -----

func.func @linear_invariant_4(%x: tensor<2x32xf32>, %w: tensor<32x96xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'dfg.linear' op result type 'tensor<2x32xf32>' contradicts the inferred 'tensor<2x96xf32>'}}
  %0 = dfg.linear %x, %w transpose_weight = false : (tensor<2x32xf32>, tensor<32x96xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @silu_invariant_1(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'dfg.silu' op operand #0 must be ranked tensor of}}
  %0 = dfg.silu %x : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// The symbolic ops (DfgSymbolicOps.td): S1, S2 are shared by all of them.

func.func @sizes_invariant_S1() -> tensor<1xi64> {
  // expected-error @+1 {{map must have no dimensions and one symbol per name (1), got 0 dimension(s) and 2 symbol(s)}}
  %s = dfg.sizes affine_map<()[s0, s1] -> (s0 + s1)> symbols ["batch"] : tensor<1xi64>
  return %s : tensor<1xi64>
}

// -----

func.func @sizes_invariant_S2() -> tensor<1xi64> {
  // expected-error @+1 {{symbol names must be distinct and non-empty}}
  %s = dfg.sizes affine_map<()[s0, s1] -> (s0 + s1)> symbols ["batch", "batch"] : tensor<1xi64>
  return %s : tensor<1xi64>
}

// -----

func.func @sizes_invariant_1() -> tensor<3xi64> {
  // expected-error @+1 {{the result must be a 0-D or 1-D i64/i32 tensor with one element per map result (2), got 'tensor<3xi64>'}}
  %s = dfg.sizes affine_map<()[s0] -> (s0, 4)> symbols ["batch"] : tensor<3xi64>
  return %s : tensor<3xi64>
}

// -----

func.func @symbolic_reshape_invariant_1(%x: tensor<?x96xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{result dimension 2 disagrees with the shape's entry}}
  %r = dfg.symbolic_reshape %x to affine_map<()[s0, s1] -> (s0, s1, 96)> symbols ["b", "s"] : (tensor<?x96xf32>) -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

func.func @symbolic_reshape_invariant_2(%x: tensor<4x96xf32>) -> tensor<2x2x48xf32> {
  // expected-error @+1 {{hold different numbers of elements}}
  %r = dfg.symbolic_reshape %x to affine_map<()[s0] -> (2, 2, 48)> symbols ["b"] : (tensor<4x96xf32>) -> tensor<2x2x48xf32>
  return %r : tensor<2x2x48xf32>
}

// -----

func.func @symbolic_expand_invariant_1(%x: tensor<3xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{result dimension 1 (4) is not the broadcast of the input's 3 and the shape's 1}}
  %e = dfg.symbolic_expand %x to affine_map<()[s0] -> (s0, 1)> symbols ["b"] : (tensor<3xf32>) -> tensor<?x4xf32>
  return %e : tensor<?x4xf32>
}

// -----

func.func @symbolic_slice_invariant_1(%x: tensor<8x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{axis 0 is out of range or repeated, or its step is 0}}
  %s = dfg.symbolic_slice %x starts = affine_map<()[s0] -> (0)> ends = affine_map<()[s0] -> (s0)> axes = [0] steps = [0] symbols ["n"] : (tensor<8x8xf32>) -> tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}

// -----

func.func @symbolic_slice_invariant_2(%x: tensor<8x8xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{dimension 1 is not sliced but changes}}
  %s = dfg.symbolic_slice %x starts = affine_map<()[s0] -> (0)> ends = affine_map<()[s0] -> (s0)> axes = [0] steps = [1] symbols ["n"] : (tensor<8x8xf32>) -> tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}

// -----

func.func @range_invariant_1() -> tensor<?xi64> {
  // expected-error @+1 {{bounds must give (start, limit) and delta must not be 0}}
  %r = dfg.range affine_map<()[s0] -> (0, s0)> delta = 0 symbols ["n"] : tensor<?xi64>
  return %r : tensor<?xi64>
}

// -----

func.func @range_invariant_2() -> tensor<?x1xi64> {
  // expected-error @+1 {{the result must be 1-D}}
  %r = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["n"] : tensor<?x1xi64>
  return %r : tensor<?x1xi64>
}

// -----

// dfg.is_nan invariant 1: a float operand, a bool result.
func.func @is_nan_invariant_1_operand(%x: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{'dfg.is_nan' op operand #0 must be ranked tensor of}}
  %0 = dfg.is_nan %x : (tensor<4xi64>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @is_nan_invariant_1_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.is_nan' op result #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = dfg.is_nan %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// dfg.is_nan invariant 2: the result has the operand's shape.
func.func @is_nan_invariant_2(%x: tensor<4xf32>) -> tensor<5xi1> {
  // expected-error @+1 {{'dfg.is_nan' op result type 'tensor<5xi1>' contradicts the inferred 'tensor<4xi1>'}}
  %0 = dfg.is_nan %x : (tensor<4xf32>) -> tensor<5xi1>
  return %0 : tensor<5xi1>
}

// -----

// dfg.gather_nd invariant 1: the tuple length must be static.
func.func @gather_nd_invariant_1(%d: tensor<2x3xf32>, %i: tensor<4x?xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.gather_nd' op the last dimension of indices must be static}}
  %0 = dfg.gather_nd %d, %i batch_dims = 0 : (tensor<2x3xf32>, tensor<4x?xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// dfg.gather_nd invariant 2: batch dimensions agree.
func.func @gather_nd_invariant_2(%d: tensor<2x3xf32>, %i: tensor<3x1xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{'dfg.gather_nd' op batch dimension 0 differs: 2 in data, 3 in indices}}
  %0 = dfg.gather_nd %d, %i batch_dims = 1 : (tensor<2x3xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// dfg.gather_nd invariant 3: tuples no longer than data's rank.
func.func @gather_nd_invariant_3(%d: tensor<2x3xf32>, %i: tensor<4x3xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'dfg.gather_nd' op index tuples of length 3 do not fit data of rank 2 with batch_dims 0}}
  %0 = dfg.gather_nd %d, %i batch_dims = 0 : (tensor<2x3xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// dfg.gather_nd invariant 4: the result shape.
func.func @gather_nd_invariant_4(%d: tensor<2x3x4xf32>, %i: tensor<5x2xi64>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'dfg.gather_nd' op result type 'tensor<5x3xf32>' contradicts the inferred 'tensor<5x4xf32>'}}
  %0 = dfg.gather_nd %d, %i batch_dims = 0 : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @top_k_invariant_1(%x: tensor<4xi1>) -> (tensor<2xi1>, tensor<2xi64>) {
  // expected-error @+1 {{'dfg.top_k' op operand #0 must be ranked tensor of}}
  %v, %i = dfg.top_k %x axis = 0 k = 2 largest = true : (tensor<4xi1>) -> (tensor<2xi1>, tensor<2xi64>)
  return %v, %i : tensor<2xi1>, tensor<2xi64>
}

// -----

func.func @top_k_invariant_2(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>) {
  // expected-error @+1 {{'dfg.top_k' op axis 2 is out of range for an input of rank 2 (expected [-2, 2))}}
  %v, %i = dfg.top_k %x axis = 2 k = 2 largest = true : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  return %v, %i : tensor<2x2xf32>, tensor<2x2xi64>
}

// -----

func.func @top_k_invariant_3(%x: tensor<2x4xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>) {
  // expected-error @+1 {{'dfg.top_k' op k = 5 must lie in [1, 4], the size of axis 1}}
  %v, %i = dfg.top_k %x axis = 1 k = 5 largest = true : (tensor<2x4xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>)
  return %v, %i : tensor<2x5xf32>, tensor<2x5xi64>
}

// -----

func.func @top_k_invariant_4(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x2xi64>) {
  // expected-error @+1 {{'dfg.top_k' op}}
  %v, %i = dfg.top_k %x axis = 1 k = 2 largest = true : (tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x2xi64>)
  return %v, %i : tensor<2x3xf32>, tensor<2x2xi64>
}
