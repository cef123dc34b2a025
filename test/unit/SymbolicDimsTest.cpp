//===- SymbolicDimsTest.cpp - Symbolic dimension arithmetic ---------------===//
//
// Part of meshc. DimTable's names <-> op attributes, evaluation of the maps
// at concrete sizes (floor and ceil division of negative values included),
// equality after simplification, and the shape rules of SymbolicShapes on a
// small function: reshapes that merge and split symbolic dimensions, a
// concat along a symbolic axis, a slice to the end.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/SymbolicDims.h"
#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "gtest/gtest.h"

#include <limits>

using namespace mlir;
using namespace meshc::dfg;

namespace {

class SymbolicDimsTest : public ::testing::Test {
protected:
  SymbolicDimsTest() : builder(&ctx), table(&ctx) {
    ctx.loadDialect<DfgDialect, func::FuncDialect>();
  }
  MLIRContext ctx;
  OpBuilder builder;
  DimTable table;
};

TEST_F(SymbolicDimsTest, WriteKeepsOnlyUsedSymbolsAndReadsBack) {
  AffineExpr b = table.symbol("batch"), s = table.symbol("seq"),
             p = table.symbol("past");
  auto [map, names] = table.write({p + s, b * 4});
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(map.getNumSymbols(), 3u);
  auto [only, one] = table.write({s * 2});
  EXPECT_EQ(one.size(), 1u);
  EXPECT_EQ(only.getNumSymbols(), 1u);

  // Another table numbers the names differently; reading maps them back.
  DimTable other(&ctx);
  other.symbol("past");
  SmallVector<AffineExpr> back = other.read(map, names);
  EXPECT_TRUE(sameDim(back[0], other.symbol("past") + other.symbol("seq")));
  EXPECT_TRUE(sameDim(back[1], other.symbol("batch") * 4));
  EXPECT_EQ(other.format(back[1]), "batch * 4");
}

TEST_F(SymbolicDimsTest, EvaluatesAtBindings) {
  AffineExpr b = table.symbol("batch"), s = table.symbol("seq");
  auto [map, names] =
      table.write({b * s, (s - 7).floorDiv(2), (s - 7).ceilDiv(2), s % 4});
  DimBindings bindings{{"batch", 3}, {"seq", 5}};
  auto values = evaluateDims(map, names, bindings);
  ASSERT_TRUE(bool(values)) << llvm::toString(values.takeError());
  EXPECT_EQ((*values)[0], 15);
  EXPECT_EQ((*values)[1], -1); // floor(-2 / 2)
  EXPECT_EQ((*values)[2], -1); // ceil(-2 / 2)
  EXPECT_EQ((*values)[3], 1);
  bindings["seq"] = 4;
  values = evaluateDims(map, names, bindings);
  ASSERT_TRUE(bool(values));
  EXPECT_EQ((*values)[1], -2); // floor(-3 / 2)
  EXPECT_EQ((*values)[2], -1); // ceil(-3 / 2)

  auto missing = evaluateDims(map, names, DimBindings{{"batch", 1}});
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("'seq' has no size"),
            std::string::npos);
}

TEST_F(SymbolicDimsTest, DerivedDimNamesParseAsExpressions) {
  AffineExpr p = table.symbol("past_sequence_length"),
             s = table.symbol("sequence_length");
  // As Optimum and the dynamo exporter write derived sizes.
  EXPECT_TRUE(sameDim(
      table.parseName("past_sequence_length + sequence_length"), p + s));
  EXPECT_TRUE(sameDim(table.parseName("2*sequence_length"), s * 2));
  EXPECT_TRUE(sameDim(table.parseName("sequence_length - 1"), s - 1));
  EXPECT_TRUE(sameDim(table.parseName("(sequence_length + 7) // 8"),
                      (s + 7).floorDiv(8)));
  AffineExpr x = table.symbol("p.x");
  EXPECT_TRUE(sameDim(table.parseName("-sequence_length + 2 * (p.x % 3)"),
                      x % 3 * 2 - s));
  // Names of their own, arithmetic-looking or not.
  for (StringRef name : {"batch_size", "batch-size", "batch size", "s0"}) {
    EXPECT_FALSE(isDerivedDimName(name)) << name.str();
    EXPECT_EQ(table.parseName(name), table.symbol(name)) << name.str();
  }
  EXPECT_TRUE(isDerivedDimName("a + b"));
  EXPECT_TRUE(isDerivedDimName("2*s0"));
  EXPECT_FALSE(isDerivedDimName("(a + b"));
  // Not affine, or not arithmetic: no expression.
  EXPECT_FALSE(table.parseName("s0*s1"));
  EXPECT_FALSE(table.parseName("a + "));
  EXPECT_FALSE(table.parseName("a / b"));
  EXPECT_TRUE(table.parseName("").operator bool() == false);

  EXPECT_EQ(namesInDimName(&ctx, "past + seq"),
            (SmallVector<std::string>{"past", "seq"}));
  DimBindings bindings{{"past", 5}, {"seq", 3}};
  EXPECT_EQ(sizeOfDimName(&ctx, "past + seq", bindings), 8);
  EXPECT_EQ(sizeOfDimName(&ctx, "seq", bindings), 3);
  EXPECT_EQ(sizeOfDimName(&ctx, "past + total", bindings), std::nullopt);
}

TEST_F(SymbolicDimsTest, SameDimAfterSimplification) {
  AffineExpr b = table.symbol("batch"), s = table.symbol("seq"),
             p = table.symbol("past");
  EXPECT_TRUE(sameDim((p + s) - p, s));
  EXPECT_TRUE(sameDim((b * s * 32).floorDiv(32), b * s));
  EXPECT_FALSE(sameDim(b, s));
  EXPECT_FALSE(sameDim(b, AffineExpr()));
}

// Expressions of one symbol whose quotients are by constants are decided by
// their values over a period: a strided convolution stack's output length as
// meshc's windows give it and as torch's shape arithmetic writes it.
TEST_F(SymbolicDimsTest, SameDimOfOneSymbolQuotients) {
  AffineExpr s = table.symbol("samples"), b = table.symbol("batch");
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, &ctx); };
  AffineExpr windows =
      (((s - 9).ceilDiv(5) - 2).ceilDiv(2) - 1).ceilDiv(2);
  AffineExpr torch = (s.floorDiv(10) - 3).floorDiv(2) + 1;
  EXPECT_TRUE(sameDim(windows, torch));
  // The heads of a [b, frames, 64] reshaped to [b, frames', -1, 16].
  EXPECT_TRUE(sameDim(divideDims({b, windows, c(64)}, {b, torch, c(16)}), c(4)));
  // Near misses: one residue off, another symbol.
  EXPECT_FALSE(sameDim(windows, (s.floorDiv(10) - 2).floorDiv(2)));
  EXPECT_FALSE(sameDim(s.floorDiv(4), s.ceilDiv(4)));
  EXPECT_FALSE(sameDim(s.floorDiv(2), b.floorDiv(2)));
  EXPECT_TRUE(sameDim((s + 1).floorDiv(2) * 2 - s, s % 2));
}

TEST_F(SymbolicDimsTest, DivideDimsCancelsFactors) {
  AffineExpr b = table.symbol("batch"), s = table.symbol("seq");
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, &ctx); };
  // GQA's merge: [batch, 2, 2, seq, 8] over [batch, 4, 8] is seq.
  EXPECT_TRUE(
      sameDim(divideDims({b, c(2), c(2), s, c(8)}, {b, c(4), c(8)}), s));
  // Flattening: [batch, seq, 32] over [32] is batch * seq.
  EXPECT_TRUE(sameDim(divideDims({b, s, c(32)}, {c(32)}), b * s));
  // A merged dimension cancels against its parts: BLOOM's scores [batch * 4,
  // seq, seq] split back to [batch, 4, seq, -1] infer seq.
  EXPECT_TRUE(sameDim(divideDims({b * 4, s, s}, {b, c(4), s}), s));
  // Nothing cancels: a floor division remains, and evaluates exactly.
  AffineExpr q = divideDims({b, c(6)}, {s});
  auto [map, names] = table.write({q});
  auto v = evaluateDims(map, names, DimBindings{{"batch", 4}, {"seq", 3}});
  ASSERT_TRUE(bool(v));
  EXPECT_EQ((*v)[0], 8);
  EXPECT_FALSE(bool(divideDims({b, AffineExpr()}, {c(2)})));
}

TEST_F(SymbolicDimsTest, ProductsOfSymbolsInAnyOrderAndSumsWithACommonFactor) {
  AffineExpr b = table.symbol("batch"), h = table.symbol("height"),
             w = table.symbol("width");
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, &ctx); };
  AffineExpr hp = h.floorDiv(8), wp = w.floorDiv(8);
  // The same patch count, its product written both ways.
  EXPECT_TRUE(sameDim(hp * wp + 1, wp * hp + 1));
  EXPECT_FALSE(sameDim(hp * wp + 1, hp * hp + 1));
  // A dynamo ViT's heads: [batch, patches + 1, (patches + 1) * 64 / ((patches
  // + 1) * 16)] with the patches' product in the other order is 4.
  AffineExpr whole = (wp * hp) * 64 + 64, part = (hp * wp) * 16 + 16;
  EXPECT_TRUE(sameDim(divideDims({b, whole}, {b, part}), c(4)));
  // A stride-8 window count rounded up is the floor quotient it equals.
  EXPECT_TRUE(sameDim(ceilDivide(h - 7, 8), hp));
  EXPECT_FALSE(sameDim(ceilDivide(h - 6, 8), hp));
}

TEST_F(SymbolicDimsTest, ElementCountsWithoutCommonFactors) {
  AffineExpr b = table.symbol("batch"), h = table.symbol("height"),
             w = table.symbol("width");
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, &ctx); };
  // Windows merged back: [b, h, w, 64] and [b, w * h, 64] hold as many.
  auto [x, y] = withoutCommonFactors({b, h, w, c(64)}, {b, w * h, c(64)});
  EXPECT_TRUE(sameDim(x, y));
  // Padded to a multiple of 2 but reshaped to the unpadded count: the
  // factors left are the round-up's and the count's, which differ.
  AffineExpr hp = ceilDivide(h, 2) * 2;
  auto [p, q] = withoutCommonFactors({b, hp, c(64)}, {b, h * 64});
  EXPECT_FALSE(sameDim(p, q));
  EXPECT_TRUE(sameDim(p, hp));
  EXPECT_TRUE(sameDim(q, h));
  // Constants divide by their greatest common divisor: 6 n and 4 m are
  // 3 n and 2 m.
  auto [s, t] = withoutCommonFactors({h, c(6)}, {w, c(4)});
  EXPECT_TRUE(sameDim(s, h * 3));
  EXPECT_TRUE(sameDim(t, w * 2));
  // A null factor gives nothing to compare.
  EXPECT_FALSE(withoutCommonFactors({h, AffineExpr()}, {h}).first);
}

TEST_F(SymbolicDimsTest, ShapeRulesThroughReshapeConcatAndSlice) {
  // f(x: [batch, seq, 32] named, past: [batch, 4, past, 8] named)
  auto f32 = builder.getF32Type();
  auto x = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, 32}, f32);
  auto kv = RankedTensorType::get(
      {ShapedType::kDynamic, 4, ShapedType::kDynamic, 8}, f32);
  auto module = ModuleOp::create(builder.getUnknownLoc());
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, builder.getUnknownLoc(), "f",
                                   builder.getFunctionType({x, kv}, {}));
  func.setArgAttr(0, "dfg.dim_names",
                  builder.getStrArrayAttr({"batch", "seq", ""}));
  func.setArgAttr(1, "dfg.dim_names",
                  builder.getStrArrayAttr({"batch", "", "past", ""}));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  Location loc = builder.getUnknownLoc();
  Value in = body->getArgument(0), past = body->getArgument(1);
  auto dyn = ShapedType::kDynamic;

  // [batch, seq, 32] -> [batch * seq, 32] -> [batch, seq, 4, 8] -> heads
  Value flat =
      ReshapeOp::create(builder, loc, RankedTensorType::get({dyn, 32}, f32), in,
                        builder.getDenseI64ArrayAttr({-1, 32}));
  AffineExpr b = table.symbol("batch"), s = table.symbol("seq");
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, &ctx); };
  auto [map, names] = table.write({b, s, c(4), c(8)});
  Value heads = SymbolicReshapeOp::create(
      builder, loc, RankedTensorType::get({dyn, dyn, 4, 8}, f32), flat, map,
      names);
  Value t = TransposeOp::create(
      builder, loc, RankedTensorType::get({dyn, 4, dyn, 8}, f32), heads,
      builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
  Value keys = ConcatOp::create(builder, loc, kv, ValueRange{past, t}, 2);
  // keys[:, :, 1:] (to the end)
  Value tail = SliceOp::create(
      builder, loc, kv, keys, builder.getDenseI64ArrayAttr({1}),
      builder.getDenseI64ArrayAttr({std::numeric_limits<int64_t>::max()}),
      builder.getDenseI64ArrayAttr({2}), builder.getDenseI64ArrayAttr({1}));

  SymbolicShapes shapes(table);
  auto text = [&](Value v) {
    std::string out;
    for (AffineExpr d : shapes.dims(v))
      out += (out.empty() ? "" : " x ") + table.format(d);
    return out;
  };
  EXPECT_EQ(text(flat), "batch * seq x 32");
  EXPECT_EQ(text(heads), "batch x seq x 4 x 8");
  // Sums print in the order the table numbers the names (seq before past).
  EXPECT_EQ(text(keys), "batch x 4 x seq + past x 8");
  EXPECT_EQ(text(tail), "batch x 4 x seq + past - 1 x 8");
  module->erase();
}

} // namespace

namespace {
// A constant end on a symbolic dimension: a length only where the dimension
// is at least that end for every size of its symbols (each at least 1).
class SliceLengthTest : public SymbolicDimsTest {};
} // namespace

TEST_F(SliceLengthTest, ConstantEndOnADimensionThatIsNeverShorter) {
  AffineExpr b = table.symbol("batch"), s = table.symbol("seq");
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, &ctx); };
  // x[:1] of [2 * batch * seq]: always 1 row.
  EXPECT_TRUE(sameDim(sliceLength(b * s * 2, c(0), c(1), 1), c(1)));
  // x[:2] of [batch + seq]: at least 2.
  EXPECT_TRUE(sameDim(sliceLength(b + s, c(0), c(2), 1), c(2)));
  // x[:3] of [batch + seq] may be clamped (batch = seq = 1): no expression.
  EXPECT_FALSE(sliceLength(b + s, c(0), c(3), 1));
  // seq - 1 may be 0; seq floordiv 2 too: no expression.
  EXPECT_FALSE(sliceLength(s - 1, c(0), c(1), 1));
  EXPECT_FALSE(sliceLength(s.floorDiv(2), c(0), c(1), 1));
  // A negative factor shrinks as seq grows.
  EXPECT_FALSE(sliceLength(c(64) - s, c(0), c(1), 1));
}

namespace {

TEST(DimBoundsTest, BoundsCarriedThroughQuotientsAndRemainders) {
  MLIRContext ctx;
  DimTable table(&ctx);
  AffineExpr s = table.symbol("seq"), b = table.symbol("batch");
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, &ctx); };
  // A pad up to a multiple of 4 and the padded length's chunk count.
  DimBounds pad = boundsOf((-s) % 4);
  EXPECT_EQ(pad.least, 0);
  EXPECT_EQ(pad.most, 3);
  DimBounds chunks = boundsOf(-((-s).floorDiv(4)));
  EXPECT_EQ(chunks.least, 1);
  EXPECT_FALSE(chunks.most);
  DimBounds negative = boundsOf(s * -4 + 3);
  EXPECT_EQ(negative.most, -1);
  EXPECT_FALSE(negative.least);
  EXPECT_EQ(boundsOf(b * s).least, 1);
  // An unrelated product of a sign-unknown factor has no bound.
  EXPECT_FALSE(boundsOf((s - 2) * b).least);
  // With the symbols' largest sizes: the pad's bound beats its value at
  // seq = 8 (0), as a compiled executable's arena needs.
  auto upTo8 = [&](unsigned) { return DimBounds{1, 8}; };
  EXPECT_EQ(boundsOf((-s) % 4 + s, upTo8).most, 11);
  EXPECT_EQ(boundsOf(b * s, upTo8).most, 64);
  // A size divided by a symbol (an export traced at one length reshapes
  // [b, 5, 64] to [b, seq, 320 floordiv seq]): largest at seq = 1, least at
  // the largest seq; its half too, and rounded up; a remainder below both.
  DimBounds per = boundsOf(c(320).floorDiv(s), upTo8);
  EXPECT_EQ(per.most, 320);
  EXPECT_EQ(per.least, 40);
  EXPECT_EQ(boundsOf(c(320).floorDiv(s).floorDiv(2), upTo8).most, 160);
  EXPECT_EQ(boundsOf(c(320).floorDiv(s)).least, 0);
  DimBounds up = boundsOf(c(20).ceilDiv(s), upTo8);
  EXPECT_EQ(up.most, 20);
  EXPECT_EQ(up.least, 3);
  EXPECT_EQ(boundsOf(c(6) % s, upTo8).most, 6);
  EXPECT_EQ(boundsOf(c(100) % s, upTo8).most, 7);
  // A dividend that may be negative has no bound by a symbol.
  EXPECT_FALSE(boundsOf((c(3) - s).floorDiv(b), upTo8).most);
  // A pad to an even length written without a remainder (SEW's), whose
  // terms' intervals are unbounded: its values over a period bound it.
  AffineExpr frames = (s.floorDiv(10) - 3).floorDiv(2) + 1;
  DimBounds even = boundsOf(frames - (frames + 1).floorDiv(2) * 2 + 1);
  EXPECT_EQ(even.least, 0);
  EXPECT_EQ(even.most, 1);
  // Growing with its symbol: least at the symbol's least size, unbounded
  // above, and bounded where the symbol is.
  DimBounds grows = boundsOf(frames - 1);
  EXPECT_EQ(grows.least, -2);
  EXPECT_FALSE(grows.most);
  auto from30 = [&](unsigned) { return DimBounds{30, 100}; };
  EXPECT_EQ(boundsOf(frames - 1, from30).least, 0);
  EXPECT_EQ(boundsOf(frames - 1, from30).most, 3);
}

} // namespace
