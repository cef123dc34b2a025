//===- EvalTool.cpp - The meshc-eval command-line tool --------------------===//
//
// Part of meshc. `meshc-eval IR.mlir --input NAME=FILE.npy ... --output-dir
// DIR` runs @main (or --function) with the dfg reference evaluator. Inputs and
// outputs are matched by their `onnx.name` attributes (or argN / resultN), so
// the files an onnxruntime run reads and writes can be used as they are. A
// partitioned program (one with a shard.grid) runs on every rank of the grid,
// in process, with global inputs and outputs.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/EvalTool.h"

#include "compiler/codegen/DTypes.h"
#include "compiler/driver/ReportError.h"

#include "compiler/tools/init_meshc.h"
#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/Eval/SpmdEvaluator.h"
#include "dialects/dfg/IR/SymbolicDims.h"
#include "meshc/runtime/npy.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace llvm;

namespace meshc {

namespace {

int fail(const Twine &msg) { return reportError("meshc-eval", msg); }

/// The name a function argument or result goes by: its onnx.name, else
/// <prefix><index>.
std::string portName(DictionaryAttr attrs, StringRef prefix, unsigned index) {
  if (attrs)
    if (auto name = attrs.getAs<StringAttr>("onnx.name"))
      return name.str();
  return (prefix + Twine(index)).str();
}

/// The sizes the import assumed (the module's dfg.dim_equal: a symbolic
/// dimension an op broadcasts against a static size; dfg.dim_negative: a
/// slice bound taken negative), checked at the arguments' sizes as the
/// executables check them; the first that does not hold, or "".
std::string violatedAssumption(ModuleOp module, func::FuncOp func,
                               ArrayRef<dfg::EvalTensor> args) {
  dfg::DimBindings bindings;
  for (unsigned i = 0; i < func.getNumArguments() && i < args.size(); ++i) {
    auto names = func.getArgAttrOfType<ArrayAttr>(i, "dfg.dim_names");
    if (!names)
      continue;
    for (auto [d, name] : enumerate(names)) {
      StringRef n = cast<StringAttr>(name).getValue();
      if (!n.empty() && !dfg::isDerivedDimName(n) && d < args[i].shape.size())
        bindings.try_emplace(n, args[i].shape[d]);
    }
  }
  dfg::DimTable table(module.getContext());
  for (const dfg::SizeAssumption &assumed :
       dfg::sizeAssumptions(module, table)) {
    SmallVector<AffineExpr> exprs{assumed.expr};
    if (assumed.other)
      exprs.push_back(assumed.other);
    auto [map, names] = table.write(exprs);
    Expected<SmallVector<int64_t>> value =
        dfg::evaluateDims(map, names, bindings);
    if (!value) {
      consumeError(value.takeError()); // a size no argument gives
      continue;
    }
    int64_t v = value->front(), w = assumed.other ? (*value)[1] : 0;
    if (!assumed.holds(v, w))
      return "the input sizes make " + table.format(assumed.expr) + " = " +
             std::to_string(v) +
             (assumed.other ? " and " + table.format(assumed.other) + " = " +
                                  std::to_string(w)
                            : std::string()) +
             assumed.violation();
  }
  return "";
}

} // namespace

int runEvalTool(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::OptionCategory category("meshc-eval options");
  cl::opt<std::string> input(cl::Positional, cl::Required,
                             cl::desc("<dfg IR file>"), cl::cat(category));
  cl::list<std::string> inputs(
      "input", cl::desc("An input, NAME=FILE.npy (NAME: onnx.name or argN)"),
      cl::value_desc("NAME=FILE"), cl::cat(category));
  cl::opt<std::string> outputDir(
      "output-dir", cl::Required,
      cl::desc("Folder for the outputs, one NAME.npy each"),
      cl::value_desc("dir"), cl::cat(category));
  cl::opt<std::string> weightsDir(
      "weights-dir",
      cl::desc("Folder the weight references are relative to (default: the "
               "IR file's folder)"),
      cl::value_desc("dir"), cl::cat(category));
  cl::opt<std::string> function("function",
                                cl::desc("Function to run (default: main)"),
                                cl::init("main"), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "meshc-eval: runs a dfg function with meshc's reference evaluator\n");

  DialectRegistry registry;
  registerAllMeshcDialects(registry);
  MLIRContext context(registry);
  // One line per problem: no dump of the operation after each diagnostic.
  context.printOpOnDiagnostic(false);
  SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(input, sourceMgr, &context);
  if (!module)
    return 1;
  auto func = module->lookupSymbol<func::FuncOp>(function);
  if (!func || func.isExternal())
    return fail("no function @" + function + " with a body in '" + input + "'");

  StringMap<std::string> files;
  for (const std::string &spec : inputs) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return fail("--input '" + spec + "' is not NAME=FILE");
    files[name] = file.str();
  }
  SmallVector<dfg::EvalTensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    std::string name = portName(func.getArgAttrDict(i), "arg", i);
    auto it = files.find(name);
    if (it == files.end())
      return fail("no --input for argument '" + name + "'");
    rt::HostTensor host;
    std::string error;
    if (!rt::readNpy(it->second, host, error))
      return fail(error);
    args.push_back(
        dfg::decodeTensor(codegen::elementTypeOf(host.dtype, &context),
                          host.shape, host.bytes.data()));
    files.erase(it);
  }
  if (!files.empty())
    return fail("--input '" + files.begin()->getKey() +
                "' names no argument of @" + function);

  if (std::string why = violatedAssumption(*module, func, args); !why.empty())
    return fail(why);
  std::string weights = weightsDir.empty() ? sys::path::parent_path(input).str()
                                           : weightsDir.getValue();
  // A partitioned program runs on every rank of its grid.
  auto grids = module->getOps<shard::GridOp>();
  auto outputs = grids.empty()
                     ? dfg::evaluate(func, args, weights)
                     : dfg::evaluateSpmd(func, *grids.begin(), args, weights);
  if (failed(outputs))
    return 1;
  if (std::error_code ec = sys::fs::create_directories(outputDir))
    return fail("cannot create '" + outputDir + "': " + ec.message());
  for (auto [i, tensor] : enumerate(*outputs)) {
    SmallString<256> path(outputDir);
    sys::path::append(path, portName(func.getResultAttrDict(i), "result", i) +
                                ".npy");
    std::optional<rt::DType> dtype = codegen::elementDType(tensor.elementType);
    if (!dtype)
      return fail("result '" + path.str().str() + "' has an element type " +
                  "that .npy files of meshc cannot hold");
    rt::HostTensor host;
    host.dtype = *dtype;
    host.shape.assign(tensor.shape.begin(), tensor.shape.end());
    host.bytes = dfg::encodeTensor(tensor);
    std::string error;
    if (!rt::writeNpy(path.str().str(), host, error))
      return fail(error);
  }
  return 0;
}

} // namespace meshc
