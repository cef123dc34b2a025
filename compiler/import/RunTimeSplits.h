//===- RunTimeSplits.h - Splits whose sizes the graph computes --*- C++ -*-===//
//
// Part of meshc. Sizes that only the data decides, held at their largest.
//
// A Split whose sizes the graph computes from data (the tokens each expert
// of a mixture receives, JetMoE's `inputs.split(expert_size)`) has parts of
// sizes known only when the program runs. meshc keeps every part at the
// whole input's size, with a mask of the rows (along the split axis) that
// belong to it, follows each part through ops that treat those rows
// independently (the part's dimension is a parallel factor of the op's
// sharding rule, shared with no operand that is not the part), and turns
// the Concat of every part, in order, along that axis into a select by the
// masks.
//
// A NonZero of data (transformers 4.x's mixtures of experts:
// `idx, top_x = torch.where(expert_mask[e])`, the expert applied to
// `hidden[top_x]`, its rows added back by `index_add_`) selects columns of
// the coordinates of every element. meshc keeps every column, with the mask
// of the selected ones, follows them the same way, and turns the scatter
// that adds them up (ScatterElements, ScatterND; into zeros when it
// overwrites) into one that adds the selected rows and zeros for the rest.
//
// Each part's ops then run on every row: exact, and as costly as a dense
// mixture of experts. Anything else that reads a part stops the import with
// a message naming the node.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_IMPORT_RUNTIMESPLITS_H
#define MESHC_COMPILER_IMPORT_RUNTIMESPLITS_H

#include "compiler/import/Legalization.h"

#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace meshc::onnximport {

class RunTimeSplits {
public:
  /// Node `ctx` is a Split whose sizes are neither constants nor symbolic
  /// sizes (computed from data, or a graph input).
  static bool isRunTimeSplit(NodeContext &ctx);

  /// Imports such a Split: every output is the input, with its rows' mask.
  mlir::LogicalResult importSplit(NodeContext &ctx);

  /// Records output 0 of node `ctx` (a NonZero of data: the coordinates of
  /// every element) as the columns `mask` selects.
  void addSelection(NodeContext &ctx, mlir::Value mask);

  /// Whether an input of `node` (by name) is a part of such a Split or
  /// selection.
  bool readsPart(const onnx::NodeProto &node) const;
  /// Whether `node` is a Concat of parts of a Split.
  bool joinsSplitParts(const onnx::NodeProto &node) const;

  /// Refuses node `ctx` where it is a Split that cuts the rows of a part
  /// (a NonZero's coordinates) into sizes of its own: the exporter unrolled
  /// a loop over them at the count it traced, which the data decides.
  mlir::LogicalResult checkSplitOfRows(NodeContext &ctx) const;

  /// Imports a Concat that reads parts: every part of one split, in order,
  /// along the axis the parts are split on, becomes a select by the masks;
  /// any other Concat of parts is an error.
  mlir::LogicalResult importConcat(NodeContext &ctx);

  /// After a node that reads parts was legalised into `created`: checks that
  /// each created op reading a part keeps its rows independent, and records
  /// the node's outputs that carry the part.
  mlir::LogicalResult follow(NodeContext &ctx,
                             llvm::ArrayRef<mlir::Operation *> created,
                             llvm::ArrayRef<mlir::Value> results);

  /// Why graph output `name` cannot be returned (it is a part of such a
  /// Split or selection); empty when it is none.
  std::string outputError(llvm::StringRef name) const;

private:
  struct Split {
    std::string node;         // the Split's description, for messages
    mlir::Value starts, ends; // i64 [parts]: where each part's rows begin, end
    mlir::AffineExpr rows;    // the split dimension's size
    unsigned parts = 0;
    mlir::Value mask; // a NonZero's selection: i1 [columns], else null
  };
  /// "part #i of Split 'name', whose sizes ..." or "the coordinates NonZero
  /// 'name' gives ...", for messages.
  std::string describe(const Split &split, unsigned index) const;
  /// Makes `op`, a dfg.scatter_nd whose indices and updates carry the
  /// selection's rows along `axis`, add only the selected ones.
  mlir::LogicalResult addSelected(NodeContext &ctx, mlir::Operation *op,
                                  const Split &selection, int64_t axis);
  struct Part {
    unsigned split = 0, index = 0;
    int64_t axis = 0; // the rows' dimension in this value
  };
  std::vector<Split> splits_;
  llvm::StringMap<Part> parts_;
};

} // namespace meshc::onnximport

#endif // MESHC_COMPILER_IMPORT_RUNTIMESPLITS_H
