//===- ProgramInternal.h - The harness's state, shared with generation -*-===//
//
// Part of meshc. Internal to the runtime: what program.cpp (the harness of
// one forward step) and generate.cpp (`meshc generate`'s token loop inside
// the rank executable) share: the harness's state and the arithmetic of a
// rank's piece of a tensor split over the grid.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_PROGRAMINTERNAL_H
#define MESHC_RUNTIME_PROGRAMINTERNAL_H

#include "meshc/runtime/npy.h"
#include "meshc/runtime/program.h"
#include "meshc/runtime/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace meshc::rt {

namespace detail {
using Shape = std::vector<std::int64_t>;

/// The per-dimension grid axes of a manifest "sharding" entry.
std::vector<std::vector<std::int64_t>>
parseSharding(const nlohmann::json &entry, std::size_t rank);
/// Where rank `rank`'s piece of a tensor of `global` shape, split as
/// `sharding`, starts, and its shape.
void pieceOf(const Shape &grid, std::int64_t rank, const Shape &global,
             const std::vector<std::vector<std::int64_t>> &sharding,
             Shape &offsets, Shape &local);
/// Copies the box `local` at `offsets` of a row-major tensor of `global`
/// shape to (toPiece) or from a dense buffer.
void copyBox(std::uint8_t *full, const Shape &global, std::uint8_t *piece,
             const Shape &offsets, const Shape &local, std::size_t width,
             bool toPiece);
} // namespace detail

/// `meshc generate`'s request, as the rank executable's options carry it.
struct GenerateOptions {
  std::string promptFile, maskFile, outputFile;
  /// Without a prompt file: `batch` sequences starting from this token (an
  /// encoder-decoder's decoder start token).
  std::int64_t startToken = -1, batch = 0;
  int maxNewTokens = 0;
  std::vector<std::int64_t> stopTokens;
  double temperature = -1; ///< < 0: not given
  int topK = 0;            ///< 0: all tokens
  double topP = 1;
  std::uint64_t seed = 0;
  bool jsonl = false;
  bool enabled() const { return !outputFile.empty(); }
  /// Greedy unless a sampling option asks otherwise (--temperature 0 is
  /// greedy whatever the others say).
  bool sampling() const {
    return temperature != 0 && (temperature > 0 || topK > 0 || topP < 1);
  }
};

struct Program::State {
  std::string manifestPath, manifestDir, outputDir = ".";
  std::map<std::string, std::string> inputFiles;
  nlohmann::json manifest;
  MappedSafetensors weights;
  std::vector<const void *> weightData;
  std::vector<HostTensor> inputs;  // the rank's pieces
  /// The inputs this rank's program does not read (the manifest's
  /// unread_inputs of its role).
  std::set<std::string> unreadInputs;
  /// The sizes of the symbolic dimensions the input files gave.
  std::map<std::string, std::int64_t> inputSymbolSizes;
  std::vector<void *> inputData;   // where kernels read them
  std::vector<HostTensor> outputs; // fetched after the last step
  std::vector<TensorRef> produced; // where the step left them
  std::vector<bool> outputSet;
  int repeat = 1;
  bool cudaGraph = true; // the manifest's "cuda_graph", --no-cuda-graph
  GenerateOptions generate;
  /// Per input: the capacity of the in-place KV cache it is (0: none).
  std::vector<std::int64_t> cacheCapacity;
  HostTensor generated; // the new tokens, [batch, steps] (sampling rank)
  bool writesGenerated = false;
};

} // namespace meshc::rt

#endif // MESHC_RUNTIME_PROGRAMINTERNAL_H
