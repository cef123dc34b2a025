//===- SymbolicDims.h - Symbolic dimensions of dfg values -------*- C++ -*-===//
//
// Part of meshc. A symbolic dimension is an mlir::AffineExpr over symbols
// only (`s0 * s1`, `s2 + s1`, `(s0 * 768) floordiv 64`); symbol k of a
// DimTable is a named dimension of the function's arguments (an ONNX
// dim_param such as batch_size). dfg's symbolic ops (DfgSymbolicOps.td) store
// expressions as affine maps with the names of their symbols; SymbolicShapes
// derives the expression of every dimension of every value from the
// arguments' names through each op's shape rule.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_SYMBOLICDIMS_H
#define MESHC_DIALECTS_DFG_IR_SYMBOLICDIMS_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace meshc::dfg {

/// The names of the symbolic dimensions one analysis or import works with:
/// name <-> symbol position.
class DimTable {
public:
  explicit DimTable(mlir::MLIRContext *context) : context_(context) {}

  mlir::MLIRContext *context() const { return context_; }
  /// The symbol named `name` (added on first use).
  mlir::AffineExpr symbol(llvm::StringRef name);
  llvm::StringRef name(unsigned position) const { return names_[position]; }
  unsigned size() const { return names_.size(); }

  /// An op's `map` with `names` for its symbols, as expressions over this
  /// table's symbols.
  llvm::SmallVector<mlir::AffineExpr> read(mlir::AffineMap map,
                                           mlir::ArrayAttr names);
  /// Expressions (none null) over this table's symbols as a map over just
  /// the symbols they use, and those symbols' names (for an op's
  /// attributes).
  std::pair<mlir::AffineMap, mlir::ArrayAttr>
  write(llvm::ArrayRef<mlir::AffineExpr> exprs) const;

  /// A dimension name of a function argument (`dfg.dim_names`: an ONNX
  /// dim_param) as an expression over this table's symbols. A plain name is
  /// its symbol; a name that is arithmetic over names and integers, as
  /// exporters write derived sizes (`past_sequence_length +
  /// sequence_length`, `2*s0`, `s1 - 1`, `(s0 + 7) // 8`), is that
  /// expression. Null for an empty name.
  mlir::AffineExpr parseName(llvm::StringRef name);

  /// "batch_size * sequence_length" (a null expression prints as "?").
  std::string format(mlir::AffineExpr expr) const;

private:
  mlir::MLIRContext *context_;
  std::vector<std::string> names_;
  llvm::StringMap<unsigned> positions_;
};

/// Whether a dimension name is arithmetic over other names (see
/// DimTable::parseName) rather than a name of its own. A run gives the sizes
/// of plain names; an input dimension with a derived name is checked against
/// its expression instead.
bool isDerivedDimName(llvm::StringRef name);

/// Sizes of named dimensions (the values the symbols take in one run).
using DimBindings = llvm::StringMap<int64_t>;

/// The names a dimension name stands on: itself for a plain name, the names
/// in its expression for a derived one.
llvm::SmallVector<std::string> namesInDimName(mlir::MLIRContext *context,
                                              llvm::StringRef name);

/// The size of a dimension name at `bindings`: a plain name's binding, a
/// derived name's expression evaluated; std::nullopt where a name it needs
/// is unbound or the arithmetic is not affine.
std::optional<int64_t> sizeOfDimName(mlir::MLIRContext *context,
                                     llvm::StringRef name,
                                     const DimBindings &bindings);

/// The results of `map` (symbols named by `names`) at `bindings`; an error
/// names an unbound symbol or a division by zero.
llvm::Expected<llvm::SmallVector<int64_t>>
evaluateDims(mlir::AffineMap map, mlir::ArrayAttr names,
             const DimBindings &bindings);

/// The product of `whole` divided by the product of `part` (a reshape's
/// inferred -1): factors that appear on both sides cancel and constants
/// divide, so [batch, 2, 2, seq, 8] over [batch, 4, 8] is `seq`; a floor
/// division remains only where nothing cancels. Null if a factor is null.
mlir::AffineExpr divideDims(llvm::ArrayRef<mlir::AffineExpr> whole,
                            llvm::ArrayRef<mlir::AffineExpr> part);

/// The products of `a` and of `b` with their common factors cancelled
/// (factors sameDim on both sides, and the constants' greatest common
/// divisor): [batch, h, w, 64] and [batch, h * w, 64] give (h * w, h * w)
/// written alike, so that sameDim tells whether they hold as many elements.
/// Null expressions if a factor is null.
std::pair<mlir::AffineExpr, mlir::AffineExpr>
withoutCommonFactors(llvm::ArrayRef<mlir::AffineExpr> a,
                     llvm::ArrayRef<mlir::AffineExpr> b);

/// numpy broadcasting of dimensions: per aligned position, a static size
/// other than 1 wins, then a symbolic one, else 1 (null where an operand's
/// is null and nothing else decides).
llvm::SmallVector<mlir::AffineExpr>
broadcastDims(llvm::ArrayRef<llvm::ArrayRef<mlir::AffineExpr>> all,
              mlir::MLIRContext *context);

/// The least and greatest values an expression of symbolic dimensions takes
/// when each symbol is at least 1 (executables refuse a size of 0), by
/// bounds carried through sums, products (by a constant, or of two factors
/// of at least 0), floor and ceil quotients and remainders by positive
/// constants, and of dividends of at least 0 by symbolic divisors of at
/// least 1; nullopt where unbounded or unknown. `(-S) mod 4` lies in
/// [0, 3]; the round-up `-((-S) floordiv 4)` is at least 1; `320 floordiv S`
/// is at most 320.
struct DimBounds {
  std::optional<int64_t> least, most;
};
DimBounds boundsOf(mlir::AffineExpr e);
/// The same with each symbol's bounds given by position (a compiled
/// executable's largest sizes: an upper bound on a dimension that does not
/// grow with its symbols, as a pad up to a multiple of a chunk).
DimBounds boundsOf(mlir::AffineExpr e,
                   llvm::function_ref<DimBounds(unsigned)> symbolBounds);

/// Length of a slice [start, end) by `step` of a dimension `dim` whose
/// bounds were normalised (negative constants count from the end, huge ends
/// mean "to the end"); assumes symbolic bounds lie inside the dimension, as
/// they do for the slices exporters write on symbolic dimensions. A constant
/// end on a symbolic dimension gives no expression (ONNX clamps it), unless
/// the dimension is at least that end for every size of its symbols, each
/// at least 1 (x[:1] of a [2 * batch * seq] tensor has 1 row).
mlir::AffineExpr sliceLength(mlir::AffineExpr dim, mlir::AffineExpr start,
                             mlir::AffineExpr end, int64_t step);

/// The value of `expr` (over `table`'s symbols) at `bindings`; an error
/// names an unbound symbol.
llvm::Expected<int64_t> evaluateDim(mlir::AffineExpr expr,
                                    const DimTable &table,
                                    const DimBindings &bindings);

/// Structural equality after simplification.
bool sameDim(mlir::AffineExpr a, mlir::AffineExpr b);

/// `e` divided by `d` > 0, rounded up, written as the floor quotient
/// (e + d - 1) floordiv d, which simplification sees through: a stride-8
/// window's count (S - 7) ceildiv 8 is S floordiv 8, as the same length
/// written the other way (a patch grid's S / 8).
mlir::AffineExpr ceilDivide(mlir::AffineExpr e, int64_t d);

/// Checks the shared invariants S1 and S2 of the symbolic ops (`what` names
/// the map in the message).
llvm::Error verifySymbols(mlir::AffineMap map, mlir::ArrayAttr names,
                          llvm::StringRef what);

/// The argument and result attribute that states the dimensions of a
/// function's arguments or results as expressions, for functions whose
/// arguments are not the model's inputs (pipeline stages):
/// `{map = affine_map<()[s0, s1] -> (s0, s1, 64)>, symbols = ["b", "s"]}`.
inline constexpr llvm::StringLiteral kDimsAttr = "dfg.dims";

/// `dims` (none null) as a `dfg.dims` attribute.
mlir::DictionaryAttr dimsAttr(const DimTable &table,
                              llvm::ArrayRef<mlir::AffineExpr> dims);

/// The symbolic dimensions of values, derived lazily from the names of the
/// function arguments' dynamic dimensions (`dfg.dim_names`, or `dfg.dims`)
/// through the shape rule of each op; a call's results are what its callee's
/// `dfg.dims` result attributes state. A static dimension is its constant; a
/// dimension no rule derives is a null expression.
class SymbolicShapes {
public:
  explicit SymbolicShapes(DimTable &table) : table_(table) {}

  /// (The reference is valid until the next query: copy it to hold it
  /// across another.)
  llvm::ArrayRef<mlir::AffineExpr> dims(mlir::Value value);

  /// The elements of an integer vector value as expressions: those of a
  /// dfg.sizes, or the values of a small integer dfg.constant; std::nullopt
  /// for anything else.
  std::optional<llvm::SmallVector<mlir::AffineExpr>> values(mlir::Value value);

  /// Whether `op` has a shape rule here (a dfg op without one has results
  /// whose dynamic dimensions no rule derives). Checked for every dfg op by
  /// test/unit/OpCoverageTest.cpp.
  bool hasRule(mlir::Operation *op);

  /// The broadcast of `op`'s operands' dimensions (the rule of elementwise
  /// ops).
  llvm::SmallVector<mlir::AffineExpr> broadcastOperands(mlir::Operation *op);

  DimTable &table() { return table_; }
  /// Drops what is remembered of `value` (call before erasing its op: a new
  /// value may later live at the same address).
  void forget(mlir::Value value) { memo_.erase(value); }
  /// Forgets every value (after rewrites outside a listening rewriter).
  void clear() { memo_.clear(); }

private:
  llvm::SmallVector<mlir::AffineExpr> compute(mlir::Value value);
  /// A `dfg.dims` attribute's expressions (all null if it is malformed).
  llvm::SmallVector<mlir::AffineExpr> readDims(mlir::DictionaryAttr stated,
                                               int64_t rank);
  /// Runs `value`'s rule (its operands known) and remembers the result.
  void derive(mlir::Value value);

  DimTable &table_;
  llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::AffineExpr>> memo_;
  /// Set when compute() meets a dfg op that no rule covers.
  bool noRule_ = false;
};

/// A size the import assumed, as the module records it for executables and
/// the reference evaluator to check at their inputs' sizes: an expression
/// that must be `size` (dfg.dim_equal: a symbolic dimension an elementwise
/// op broadcasts against a static size), that must equal another
/// expression `other` (dfg.dim_same: a reshape's input and the shape it
/// computes hold as many elements, which meshc's expressions do not show),
/// or negative without either (dfg.dim_negative: a slice bound taken on the
/// side the export was traced on), and the node that needs it.
struct SizeAssumption {
  mlir::AffineExpr expr; // over the table sizeAssumptions read into
  std::optional<int64_t> size;
  mlir::AffineExpr other; // dfg.dim_same only
  std::string node;
  /// For dfg.dim_same: what the two expressions are ("the elements of its
  /// input and of its shape").
  std::string what;
  /// Whether the expression's value `v` (and `other`'s, `w`) satisfies it.
  bool holds(int64_t v, int64_t w = 0) const {
    return other ? v == w : size ? v == *size : v < 0;
  }
  /// What follows "the input sizes make EXPR = V" (for dfg.dim_same,
  /// "... and OTHER = W") where it does not hold.
  std::string violation() const;
  /// The entry the module records (its expressions over `table`'s symbols).
  mlir::DictionaryAttr toAttr(const DimTable &table) const;
};
/// The assumptions recorded on `module` (its dfg.dim_equal, dfg.dim_same
/// and dfg.dim_negative), their expressions read into `table`.
llvm::SmallVector<SizeAssumption> sizeAssumptions(mlir::Operation *module,
                                                  DimTable &table);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_IR_SYMBOLICDIMS_H
