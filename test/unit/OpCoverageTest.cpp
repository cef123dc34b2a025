//===- OpCoverageTest.cpp - Every dfg op is handled everywhere ------------===//
//
// Part of meshc. The check that the places an op must be known cannot drift
// apart: for every registered dfg op, a sample (Inputs/every_dfg_op.mlir)
// must exist, and the sample must have a sharding rule, a symbolic shape
// rule, a reference evaluation and an emission for each target. A failure
// names the op and the missing piece; docs/adding-an-op.md says where each
// piece lives.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/RankEmitter.h"
#include "compiler/codegen/WeightShards.h"
#include "compiler/tools/init_meshc.h"
#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"
#include "dialects/dfg/Sharding/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <fstream>

using namespace mlir;
using namespace meshc;

namespace {

/// The sizes the samples' named dimensions take (n = b * s, as the
/// symbolic_reshape sample needs).
dfg::DimBindings sampleDims() {
  dfg::DimBindings dims;
  dims["b"] = 2;
  dims["s"] = 3;
  dims["p"] = 4;
  dims["n"] = 6;
  return dims;
}

class OpCoverageTest : public ::testing::Test {
protected:
  OpCoverageTest() : context(registry()) {
    context.loadAllAvailableDialects();
    module = parseSourceFile<ModuleOp>(MESHC_EVERY_OP_FILE, &context);
  }

  static DialectRegistry registry() {
    DialectRegistry r;
    registerAllMeshcDialects(r);
    return r;
  }

  /// Each sample function's op of interest: the op before its terminator.
  std::vector<Operation *> samples() {
    std::vector<Operation *> ops;
    for (auto fn : module->getOps<func::FuncOp>()) {
      Block &body = fn.getBody().front();
      if (body.getOperations().size() >= 2)
        ops.push_back(body.getTerminator()->getPrevNode());
    }
    return ops;
  }

  /// Runs `check` with diagnostics collected; returns them ("" if none).
  template <typename Fn> std::string diagnosticsOf(Fn &&check) {
    std::string text;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      text += d.str() + "\n";
      return success();
    });
    check();
    return text;
  }

  /// Operand values: zeros for integers (always valid indices), alternating
  /// bools, positive floats; dynamic dimensions from the argument's names.
  dfg::EvalTensor operandValue(Value v, const dfg::DimBindings &dims) {
    auto type = cast<RankedTensorType>(v.getType());
    dfg::EvalTensor t;
    t.elementType = type.getElementType();
    ArrayAttr names;
    if (auto arg = dyn_cast<BlockArgument>(v))
      if (auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
        names =
            fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "dfg.dim_names");
    for (auto [i, size] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(size)) {
        t.shape.push_back(size);
        continue;
      }
      StringRef name = names && i < names.size()
                           ? cast<StringAttr>(names[i]).getValue()
                           : "";
      t.shape.push_back(dims.lookup(name));
    }
    t.values.resize(t.numElements());
    for (size_t i = 0; i < t.values.size(); ++i)
      t.values[i] = isa<FloatType>(t.elementType) ? 0.25 + 0.125 * (i % 7)
                    : t.elementType.isInteger(1)  ? double(i % 2)
                                                  : 0.0;
    return t;
  }

  /// A rank program holding `fn` as @main, beside the file's grid.
  OwningOpRef<ModuleOp> rankProgram(func::FuncOp fn) {
    OpBuilder b(&context);
    OwningOpRef<ModuleOp> program = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(program->getBody());
    for (auto grid : module->getOps<shard::GridOp>())
      b.clone(*grid);
    auto main = cast<func::FuncOp>(b.clone(*fn));
    main.setSymName("main");
    return program;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(OpCoverageTest, EveryRegisteredOpHasASample) {
  ASSERT_TRUE(module) << "cannot parse " << MESHC_EVERY_OP_FILE;
  llvm::StringSet<> seen;
  module->walk(
      [&](Operation *op) { seen.insert(op->getName().getStringRef()); });
  int dfgOps = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "dfg")
      continue;
    ++dfgOps;
    EXPECT_TRUE(seen.contains(name.getStringRef()))
        << name.getStringRef().str()
        << " has no sample in test/unit/Inputs/every_dfg_op.mlir: add one "
           "(docs/adding-an-op.md), so that its rules are checked";
  }
  EXPECT_GT(dfgOps, 50);
}

TEST_F(OpCoverageTest, EveryOpHasAShardingRule) {
  ASSERT_TRUE(module);
  for (Operation *op : samples()) {
    bool ok = true;
    std::string diag =
        diagnosticsOf([&] { ok = succeeded(dfg::getShardingRule(op)); });
    EXPECT_TRUE(ok) << op->getName().getStringRef().str()
                    << " has no sharding rule: " << diag;
  }
}

TEST_F(OpCoverageTest, EveryOpHasASymbolicShapeRule) {
  ASSERT_TRUE(module);
  for (Operation *op : samples()) {
    dfg::DimTable table(&context);
    dfg::SymbolicShapes shapes(table);
    EXPECT_TRUE(shapes.hasRule(op))
        << op->getName().getStringRef().str()
        << " has no symbolic shape rule (SymbolicShapes::compute)";
  }
}

TEST_F(OpCoverageTest, EveryOpHasAReferenceEvaluation) {
  ASSERT_TRUE(module);
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("meshc-opcoverage", dir));
  {
    // The weight sample's file: 128 zero bytes.
    llvm::SmallString<128> file(dir);
    llvm::sys::path::append(file, "w.bin");
    std::ofstream(file.c_str(), std::ios::binary) << std::string(128, '\0');
  }
  dfg::DimBindings dims = sampleDims();
  for (Operation *op : samples()) {
    std::vector<dfg::EvalTensor> operands;
    for (Value v : op->getOperands())
      operands.push_back(operandValue(v, dims));
    bool ok = true;
    std::string diag = diagnosticsOf([&] {
      auto results = dfg::evaluateOp(op, operands, dir, &dims);
      ok = succeeded(results) && results->size() == op->getNumResults();
    });
    EXPECT_TRUE(ok) << op->getName().getStringRef().str()
                    << " is not evaluated by the reference evaluator: " << diag;
  }
  llvm::sys::fs::remove_directories(dir);
}

TEST_F(OpCoverageTest, EveryOpIsEmittedForEveryTarget) {
  ASSERT_TRUE(module);
  dfg::DimBindings bounds = sampleDims();
  for (codegen::Target target : {codegen::Target::Cpu, codegen::Target::Cuda})
    for (Operation *op : samples()) {
      auto fn = op->getParentOfType<func::FuncOp>();
      OwningOpRef<ModuleOp> program = rankProgram(fn);
      std::vector<codegen::GroupAxes> groups = codegen::collectGroups(*program);
      codegen::WeightShards weights;
      bool dynamic = llvm::any_of(fn.getArgumentTypes(), [](Type t) {
        return !cast<RankedTensorType>(t).hasStaticShape();
      });
      bool ok = true;
      std::string diag = diagnosticsOf([&] {
        ok = succeeded(
            codegen::emitRankProgram(*program, "role", groups, "", weights,
                                     dynamic ? &bounds : nullptr, target));
      });
      EXPECT_TRUE(ok) << op->getName().getStringRef().str()
                      << " is not emitted for the "
                      << codegen::targetName(target).str()
                      << " target: " << diag;
    }
}

} // namespace
