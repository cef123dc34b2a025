//===- generate.cpp - `meshc generate`'s token loop in a rank executable ---===//
//
// Part of meshc. One launch runs the whole generation: a prefill step over
// the prompts (an empty cache), then one step per new token. Every rank
// builds the same step inputs (the tokens so far, the attention mask grown
// by one, the positions Hugging Face derives from the mask) and takes its
// piece of each, as `meshc run` does with input files. The KV caches the
// manifest names (a present output that extends a past input, found by the
// compiler from the shapes) stay on the rank that computes them, in buffers
// sized for the whole generation. Where the compiler made the attention
// that reads a cache able to append to it in place (Program::cacheCapacity;
// the manifest's "in_place_caches"), each step writes only its new keys and
// values there and nothing else is copied; otherwise the rank's present is
// copied into the buffer after the step and becomes the next past. Either
// way the cache never leaves the rank or its device. A cache of fixed length
// (onnxruntime-genai's sliding-window layers, "fixed" in the manifest: the
// least length the model takes, its window) is zeros before the prompt and
// then each step's present.
//
// The logits of the last position go to one rank (the lowest that holds
// them), which picks each sequence's next token, greedily or by sampling
// with a seeded counter-based generator, and sends the tokens to every
// rank: all ranks continue with the same tokens, so they never diverge.
// That rank streams the tokens, one line per step, and writes the result.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/error.h"
#include "meshc/runtime/half.h"
#include "meshc/runtime/npy.h"
#include "meshc/runtime/program.h"
#include "runtime/Placement.h"
#include "runtime/ProgramInternal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace meshc::rt {

namespace {

using json = nlohmann::json;
using detail::Shape;

/// A uniform draw in [0, 1) for sequence `row` at step `step`: splitmix64
/// of the seed and the pair, so a seed gives the same draws on every run,
/// mesh and machine.
double uniform(std::uint64_t seed, std::uint64_t step, std::uint64_t row) {
  std::uint64_t z =
      seed + 0x9e3779b97f4a7c15ull * (step * 1000003ull + row + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

/// The next token from one row of logits: the largest (the lowest id among
/// equals) when greedy; otherwise a draw from the softmax of logits /
/// temperature over the top-k tokens, cut to the smallest set whose
/// probability reaches top-p.
std::int64_t chooseToken(const float *logits, std::int64_t vocab,
                         const GenerateOptions &o, std::uint64_t step,
                         std::uint64_t row) {
  if (!o.sampling()) {
    std::int64_t best = 0;
    for (std::int64_t v = 1; v < vocab; ++v)
      if (logits[v] > logits[best])
        best = v;
    return best;
  }
  double t = o.temperature > 0 ? o.temperature : 1.0;
  std::vector<std::pair<double, std::int64_t>> order(vocab);
  for (std::int64_t v = 0; v < vocab; ++v)
    order[v] = {logits[v] / t, v};
  std::stable_sort(order.begin(), order.end(),
                   [](const auto &a, const auto &b) { return a.first > b.first; });
  std::size_t keep = order.size();
  if (o.topK > 0)
    keep = std::min<std::size_t>(keep, o.topK);
  std::vector<double> p(keep);
  double sum = 0;
  for (std::size_t i = 0; i < keep; ++i)
    sum += p[i] = std::exp(order[i].first - order[0].first);
  if (o.topP < 1) {
    double mass = 0;
    std::size_t n = 0;
    while (n < keep) {
      mass += p[n++] / sum;
      if (mass >= o.topP)
        break;
    }
    keep = n;
    sum = 0;
    for (std::size_t i = 0; i < keep; ++i)
      sum += p[i];
  }
  double u = uniform(o.seed, step, row) * sum, acc = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    acc += p[i];
    if (u < acc)
      return order[i].second;
  }
  return order[keep - 1].second;
}

/// Reads a [batch, length] integer .npy (int64 or int32) into rows.
std::vector<std::vector<std::int64_t>> readRows(const std::string &path,
                                                const char *what) {
  HostTensor t;
  std::string error;
  if (!readNpy(path, t, error))
    fatal(error);
  if (t.shape.size() != 2 || (t.dtype != DType::I64 && t.dtype != DType::I32))
    fatal(std::string(what) + " '" + path +
          "' must be a 2-D array of int64 or int32 [batch, length], not " +
          std::string(safetensorsName(t.dtype)) + " " + formatShape(t.shape));
  std::vector<std::vector<std::int64_t>> rows(t.shape[0]);
  for (std::int64_t b = 0; b < t.shape[0]; ++b)
    for (std::int64_t j = 0; j < t.shape[1]; ++j) {
      std::size_t at = static_cast<std::size_t>(b * t.shape[1] + j);
      rows[b].push_back(t.dtype == DType::I64
                            ? reinterpret_cast<const std::int64_t *>(
                                  t.bytes.data())[at]
                            : reinterpret_cast<const std::int32_t *>(
                                  t.bytes.data())[at]);
    }
  return rows;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  std::size_t at = static_cast<std::size_t>(
      std::ceil(q * static_cast<double>(values.size())) - 1);
  return values[std::min(at, values.size() - 1)];
}

/// Message tags of the loop's host transfers (apart from output assembly's).
constexpr int kLogitsTag = 7001, kTokensTag = 7002;

} // namespace

void Program::generate(void (*body)(Program &)) {
  using namespace detail;
  State &s = *state_;
  const json &m = s.manifest;
  const GenerateOptions &o = s.generate;
  if (!m.contains("generate") || !m["generate"].is_object())
    fatal("the manifest has no \"generate\" section: recompile the model with "
          "this meshc");
  const json &gen = m["generate"];
  if (gen.contains("unsupported"))
    fatal("this model cannot generate: " +
          gen["unsupported"].get<std::string>());
  if (o.maxNewTokens < 1 || o.outputFile.empty())
    fatal("generation needs --generate-max-new-tokens N (at least 1) and "
          "--generate-output FILE (meshc generate passes them)");

  // The prompts (without a file, each sequence from the decoder start
  // token), the mask (ones by default) and their shapes.
  std::vector<std::vector<std::int64_t>> tokens =
      o.promptFile.empty()
          ? std::vector<std::vector<std::int64_t>>(
                std::max<std::int64_t>(o.batch, 0),
                std::vector<std::int64_t>(1, o.startToken))
          : readRows(o.promptFile, "the prompt ids");
  std::int64_t batch = static_cast<std::int64_t>(tokens.size());
  if (batch == 0 || tokens[0].empty())
    fatal("the prompt ids '" + o.promptFile + "' are empty");
  std::int64_t promptLength = static_cast<std::int64_t>(tokens[0].size());
  std::vector<std::vector<std::int64_t>> mask(
      batch, std::vector<std::int64_t>(promptLength, 1));
  if (!o.maskFile.empty()) {
    mask = readRows(o.maskFile, "the attention mask");
    if (static_cast<std::int64_t>(mask.size()) != batch ||
        static_cast<std::int64_t>(mask[0].size()) != promptLength)
      fatal("the attention mask '" + o.maskFile + "' is not shaped as the " +
            "prompt ids [" + std::to_string(batch) + ", " +
            std::to_string(promptLength) + "]");
  }
  std::int64_t vocab = gen.value("vocabulary", std::int64_t(0));
  for (const auto &row : tokens)
    for (std::int64_t t : row)
      if (t < 0 || t >= vocab)
        fatal("prompt token id " + std::to_string(t) +
              " is outside the vocabulary (0 to " + std::to_string(vocab - 1) +
              ")");

  const Shape &grid = comm_->grid();
  std::int64_t me = comm_->rank();
  std::string batchSymbol = gen.value("batch_symbol", "");
  bool cached = !gen["cache"].empty();
  // The inputs every step reads unchanged were read from their files with
  // the rank's other inputs; their batch is the prompts'.
  std::set<std::string> fixedInputs;
  for (const json &name : gen.value("fixed_inputs", json::array()))
    fixedInputs.insert(name.get<std::string>());
  auto sourceBatch = s.inputSymbolSizes.find(batchSymbol);
  if (!fixedInputs.empty() && sourceBatch != s.inputSymbolSizes.end() &&
      sourceBatch->second != batch)
    fatal("the inputs given with --input hold " +
          std::to_string(sourceBatch->second) + " sequences, the prompts " +
          std::to_string(batch));

  // This role: the inputs it does not read (read with the manifest), the
  // caches it holds.
  const std::set<std::string> &unread = s.unreadInputs;
  std::string role = m["ranks"][me].value("role", "");
  std::set<std::string> inPlace;
  for (const json &r : m["roles"])
    if (r.value("name", "") == role)
      for (const json &name : r.value("in_place_caches", json::array()))
        inPlace.insert(name.get<std::string>());
  auto outputIndex = [&](const std::string &name) {
    for (int i = 0; i < info_.numOutputs; ++i)
      if (name == info_.outputs[i].name)
        return i;
    return -1;
  };
  // Benchmarks compare with the copying loop (bench/cpu_generate.py).
  if (std::getenv("MESHC_KV_CACHE_COPY"))
    inPlace.clear();
  struct Cache {
    std::int64_t axis;
    int output;
    bool inPlace; // the attention appends to the buffer itself
    /// > 0: a cache of this fixed length (a sliding window: its present
    /// keeps the past's length), zeros before the prompt, then each present.
    std::int64_t fixed = 0;
    void *buffer = nullptr;
    std::size_t capacity = 0;
  };
  std::map<std::string, Cache> caches; // by past input
  for (const json &c : gen["cache"]) {
    std::string past = c.value("past", "");
    std::int64_t fixed = c.value("fixed", std::int64_t(0));
    caches[past] = {c.value("axis", std::int64_t(2)),
                    outputIndex(c.value("present", "")),
                    inPlace.count(past) > 0 && fixed == 0, fixed};
  }
  // Positions a cache holds at most: the prompt and every new token but
  // the last, which no step reads.
  const std::int64_t cachePositions =
      std::max<std::int64_t>(promptLength + o.maxNewTokens - 1, 1);
  s.cacheCapacity.assign(info_.numInputs, 0);

  // Each input as the steps fill it, read from the manifest once.
  enum class Feed { Tokens, Mask, Positions, Cache, Fixed };
  struct InputPlan {
    Feed feed;
    Shape shape; // the manifest's global shape (-1: symbolic)
    std::vector<std::vector<std::int64_t>> sharding;
    std::vector<std::string> dims;
    bool read;
  };
  std::vector<InputPlan> plans;
  for (int i = 0; i < info_.numInputs; ++i) {
    std::string name = info_.inputs[i].name;
    const json *entry = nullptr;
    for (const json &e : m["inputs"])
      if (e.value("name", "") == name)
        entry = &e;
    if (!entry)
      fatal("input '" + name + "' is not in the manifest");
    InputPlan plan;
    plan.feed = caches.count(name)                         ? Feed::Cache
                : fixedInputs.count(name)                 ? Feed::Fixed
                : name == gen.value("input_ids", "")      ? Feed::Tokens
                : name == gen.value("attention_mask", "") ? Feed::Mask
                                                          : Feed::Positions;
    if (plan.feed == Feed::Fixed && s.inputs.size() > static_cast<size_t>(i) &&
        s.inputs[i].bytes.empty() && !unread.count(name))
      fatal("input '" + name + "' is read unchanged by every step, but no "
            "file was given for it (meshc generate --input " + name +
            "=FILE.npy)");
    plan.shape = (*entry)["shape"].get<Shape>();
    plan.sharding = parseSharding(*entry, plan.shape.size());
    plan.dims.assign(plan.shape.size(), "");
    if (entry->contains("dims"))
      plan.dims = (*entry)["dims"].get<std::vector<std::string>>();
    plan.read = !unread.count(name);
    plans.push_back(std::move(plan));
  }

  // The logits: who holds which piece, and who picks the tokens.
  const json *logitsEntry = nullptr;
  for (const json &e : m["outputs"])
    if (e.value("name", "") == gen.value("logits", ""))
      logitsEntry = &e;
  if (!logitsEntry || (*logitsEntry)["ranks"].empty())
    fatal("the manifest names no rank holding the logits");
  auto logitsSharding = parseSharding(*logitsEntry, 3);
  std::vector<std::int64_t> holders =
      (*logitsEntry)["ranks"].get<std::vector<std::int64_t>>();
  std::int64_t sampler = holders.front();
  int logitsOutput = outputIndex(gen.value("logits", ""));

  // The fixed inputs keep the pieces and places their files gave; the
  // others are filled per step.
  s.inputs.resize(info_.numInputs);
  s.inputData.resize(info_.numInputs, nullptr);
  std::vector<void *> stepBuffers(info_.numInputs, nullptr);
  std::vector<std::size_t> stepCapacity(info_.numInputs, 0);
  // A past of length 0 (the prefill) still needs an address.
  void *empty = placement::allocateBuffer(64, "an empty KV cache");

  int maxNew = o.maxNewTokens;
  std::vector<bool> finished(batch, false);
  std::vector<std::int64_t> generated; // [batch, steps], on the sampler
  std::vector<double> stepMs;
  std::int64_t decodedTokens = 0, promptTokens = 0;
  for (const auto &row : mask)
    for (std::int64_t v : row)
      promptTokens += v != 0;
  std::set<std::int64_t> stops(o.stopTokens.begin(), o.stopTokens.end());
  int killRank = -1, killStep = -1;
  if (const char *fault = std::getenv("MESHC_FAULT_KILL_AT_STEP"))
    std::sscanf(fault, "%d:%d", &killRank, &killStep);

  int steps = 0;
  for (int step = 0; step < maxNew; ++step) {
    if (killRank == me && killStep == step)
      std::raise(SIGKILL);
    auto start = std::chrono::steady_clock::now();
    std::int64_t length = static_cast<std::int64_t>(tokens[0].size());
    std::int64_t news = (!cached || step == 0) ? length : 1;
    std::int64_t past = cached ? length - news : 0;

    for (int i = 0; i < info_.numInputs; ++i) {
      const TensorSpec &spec = info_.inputs[i];
      const InputPlan &plan = plans[i];
      std::string name = spec.name;
      Shape global = plan.shape;
      if (plan.feed == Feed::Fixed)
        continue;
      if (plan.feed == Feed::Cache) {
        Cache &c = caches.at(name);
        for (std::size_t d = 0; d < global.size(); ++d)
          if (static_cast<std::int64_t>(d) == c.axis)
            global[d] = c.fixed > 0 ? c.fixed : past;
          else if (global[d] < 0 && plan.dims[d] == batchSymbol)
            global[d] = batch;
          else if (global[d] < 0)
            fatal("KV cache input '" + name + "' has a symbolic dimension " +
                  std::to_string(d) + " ('" + plan.dims[d] +
                  "') that is neither the batch nor the cached length");
        Shape offsets, local;
        pieceOf(grid, me, global, plan.sharding, offsets, local);
        s.inputs[i].dtype = spec.dtype;
        s.inputs[i].shape = local;
        if (c.inPlace && plan.read && !c.buffer) {
          // Sized once for the whole generation: the rank's piece at the
          // full capacity along the growing axis.
          Shape full = local;
          full[c.axis] = cachePositions;
          c.capacity = byteWidth(spec.dtype);
          for (std::int64_t d : full)
            c.capacity *= static_cast<std::size_t>(d);
          c.buffer = placement::allocateBuffer(c.capacity, "a KV cache");
          s.cacheCapacity[i] = full[c.axis];
        }
        if (c.fixed > 0 && plan.read && !c.buffer) {
          // Its whole length from the prompt on, zeros (the prompt's step
          // reads none of it); each present then replaces it.
          c.capacity = byteWidth(spec.dtype);
          for (std::int64_t d : local)
            c.capacity *= static_cast<std::size_t>(d);
          c.buffer = placement::allocateBuffer(c.capacity, "a KV cache");
          std::vector<char> zeros(c.capacity, 0);
          placement::upload(c.buffer, zeros.data(), c.capacity);
        }
        s.inputData[i] = !plan.read ? nullptr : c.buffer ? c.buffer : empty;
        continue;
      }
      // Tokens, mask and positions: [batch, width] of the sequences so far.
      std::int64_t width = plan.feed == Feed::Mask ? past + news : news;
      if (global.size() != 2 || (global[0] >= 0 && global[0] != batch) ||
          (global[1] >= 0 && global[1] != width))
        fatal("input '" + name + "' is compiled as " + formatShape(global) +
              ", but step " + std::to_string(step) + " has [" +
              std::to_string(batch) + ", " + std::to_string(width) + "]");
      global = {batch, width};
      std::vector<std::int64_t> values(batch * width);
      for (std::int64_t b = 0; b < batch; ++b) {
        std::int64_t from = length - width;
        if (plan.feed == Feed::Tokens) {
          for (std::int64_t j = 0; j < width; ++j)
            values[b * width + j] = tokens[b][from + j];
        } else if (plan.feed == Feed::Mask) {
          for (std::int64_t j = 0; j < width; ++j)
            values[b * width + j] = mask[b][from + j];
        } else {
          // Positions as Hugging Face derives them from the mask: the count
          // of attended tokens before each one; 1 on padding.
          std::int64_t count = 0;
          for (std::int64_t j = 0; j < length; ++j) {
            std::int64_t position = mask[b][j] ? count : 1;
            count += mask[b][j] != 0;
            if (j >= from)
              values[b * width + (j - from)] = position;
          }
        }
      }
      HostTensor full;
      full.dtype = spec.dtype;
      full.shape = global;
      std::size_t elementWidth = byteWidth(spec.dtype);
      full.bytes.resize(values.size() * elementWidth);
      for (std::size_t k = 0; k < values.size(); ++k) {
        if (spec.dtype == DType::I64)
          reinterpret_cast<std::int64_t *>(full.bytes.data())[k] = values[k];
        else
          reinterpret_cast<std::int32_t *>(full.bytes.data())[k] =
              static_cast<std::int32_t>(values[k]);
      }
      Shape offsets, local;
      pieceOf(grid, me, global, plan.sharding, offsets, local);
      HostTensor &piece = s.inputs[i];
      piece.dtype = spec.dtype;
      piece.shape = local;
      piece.bytes.resize(static_cast<std::size_t>(piece.numElements()) *
                         elementWidth);
      copyBox(full.bytes.data(), global, piece.bytes.data(), offsets, local,
              elementWidth, /*toPiece=*/true);
      if (!plan.read) {
        s.inputData[i] = nullptr;
        continue;
      }
      if (stepCapacity[i] < piece.bytes.size()) {
        // Sized once for the longest step (the prefill's, or the mask's at
        // the end).
        std::size_t bytes = std::max<std::size_t>(
            piece.bytes.size(), static_cast<std::size_t>(local[0]) *
                                    (promptLength + maxNew) * elementWidth);
        stepBuffers[i] = placement::allocateBuffer(bytes, "a step input");
        stepCapacity[i] = bytes;
      }
      placement::upload(stepBuffers[i], piece.bytes.data(), piece.bytes.size());
      s.inputData[i] = stepBuffers[i];
    }

    body(*this);
    if (comm_->inFlight() != 0)
      fatal("the forward step of " + std::string(info_.role) + " left " +
            std::to_string(comm_->inFlight()) +
            " collective(s) started and never waited for");

    // The presents become the next step's pasts.
    for (auto &[pastName, cache] : caches) {
      if (cache.inPlace || cache.output < 0 || !s.outputSet[cache.output])
        continue;
      const TensorRef &present = s.produced[cache.output];
      std::size_t bytes = present.byteSize();
      if (cache.capacity < bytes) {
        std::int64_t positions = present.shape[cache.axis];
        std::size_t perPosition = positions ? bytes / positions : bytes;
        cache.capacity = std::max<std::size_t>(
            bytes, perPosition * static_cast<std::size_t>(cachePositions));
        cache.buffer = placement::allocateBuffer(cache.capacity, "a KV cache");
      }
      placement::copyPlaced(cache.buffer, present.data, bytes);
    }
    placement::synchronize("a generation step");

    // The last position's logits, to the sampling rank.
    Shape global = {batch, news, vocab};
    std::map<Shape, std::int64_t> senders; // the pieces holding the position
    for (std::int64_t r : holders) {
      Shape offsets, local;
      pieceOf(grid, r, global, logitsSharding, offsets, local);
      if (offsets[1] <= news - 1 && news - 1 < offsets[1] + local[1])
        senders.emplace(offsets, r);
    }
    auto lastRows = [&](const Shape &offsets, const Shape &local) {
      if (logitsOutput < 0 || !s.outputSet[logitsOutput])
        fatal("the logits were never computed on rank " + std::to_string(me));
      // As f32 whatever the model's type (an f16 or bf16 model's logits).
      const TensorRef &l = s.produced[logitsOutput];
      std::size_t width = byteWidth(l.dtype);
      std::vector<std::uint8_t> raw(local[2] * width);
      std::vector<float> rows(local[0] * local[2]);
      std::int64_t at = news - 1 - offsets[1];
      for (std::int64_t b = 0; b < local[0]; ++b) {
        placement::fetch(raw.data(),
                         static_cast<const std::uint8_t *>(l.data) +
                             (b * local[1] + at) * local[2] * width,
                         raw.size());
        convertFloatsSaturating(l.dtype, DType::F32, raw.data(),
                                rows.data() + b * local[2], local[2]);
      }
      return rows;
    };
    std::vector<std::int64_t> message(batch + 1, 0);
    if (me != sampler) {
      for (auto &[offsets, sender] : senders)
        if (sender == me) {
          Shape o2, local;
          pieceOf(grid, me, global, logitsSharding, o2, local);
          std::vector<float> rows = lastRows(o2, local);
          comm_->sendBytes(static_cast<int>(sampler), rows.data(),
                           rows.size() * sizeof(float), kLogitsTag,
                           "sending the logits of a generation step");
        }
      comm_->recvBytes(static_cast<int>(sampler), message.data(),
                       message.size() * sizeof(std::int64_t), kTokensTag,
                       "receiving the tokens of a generation step");
    } else {
      std::vector<float> all(batch * vocab);
      for (auto &[offsets, sender] : senders) {
        Shape o2, local;
        pieceOf(grid, sender, global, logitsSharding, o2, local);
        std::vector<float> rows;
        if (sender == me) {
          rows = lastRows(o2, local);
        } else {
          rows.resize(local[0] * local[2]);
          comm_->recvBytes(static_cast<int>(sender), rows.data(),
                           rows.size() * sizeof(float), kLogitsTag,
                           "receiving the logits of a generation step");
        }
        for (std::int64_t b = 0; b < local[0]; ++b)
          std::memcpy(all.data() + (o2[0] + b) * vocab + o2[2],
                      rows.data() + b * local[2], local[2] * sizeof(float));
      }
      bool done = true;
      for (std::int64_t b = 0; b < batch; ++b) {
        if (finished[b]) {
          message[b] = tokens[b].back();
          continue;
        }
        message[b] = chooseToken(all.data() + b * vocab, vocab, o,
                                 static_cast<std::uint64_t>(step),
                                 static_cast<std::uint64_t>(b));
        if (step > 0)
          ++decodedTokens;
        done &= stops.count(message[b]) != 0;
      }
      message[batch] = done || step + 1 == maxNew;
      for (std::int64_t r = 0; r < comm_->size(); ++r)
        if (r != me)
          comm_->sendBytes(static_cast<int>(r), message.data(),
                           message.size() * sizeof(std::int64_t), kTokensTag,
                           "sending the tokens of a generation step");
    }
    for (std::int64_t b = 0; b < batch; ++b) {
      finished[b] = finished[b] || stops.count(message[b]) != 0;
      tokens[b].push_back(message[b]);
      mask[b].push_back(1);
    }
    ++steps;
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    stepMs.push_back(ms);
    if (me == sampler) {
      generated.insert(generated.end(), message.begin(),
                       message.begin() + batch);
      std::string line;
      if (o.jsonl) {
        line = "{\"step\": " + std::to_string(step) + ", \"tokens\": [";
        for (std::int64_t b = 0; b < batch; ++b)
          line += (b ? ", " : "") + std::to_string(message[b]);
        char timing[64];
        std::snprintf(timing, sizeof(timing), "], \"ms\": %.3f}", ms);
        line += timing;
      } else {
        line = "step " + std::to_string(step) + ":";
        for (std::int64_t b = 0; b < batch; ++b)
          line += " " + std::to_string(message[b]);
      }
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
    if (message[batch])
      break;
  }

  // Whether every rank held its growing caches in place (a collective: all
  // ranks). A fixed-length cache (a sliding window's few positions) is
  // replaced by its present at every step by design.
  std::uint64_t copied = 0;
  for (auto &[pastName, cache] : caches)
    copied += !cache.inPlace && cache.fixed == 0 && cache.output >= 0 &&
              !unread.count(pastName);
  std::uint64_t copiedAnywhere = 0;
  for (std::uint64_t n : comm_->allGatherWorld(copied, "generation summary"))
    copiedAnywhere += n;
  const char *cacheMode = !cached            ? "none"
                          : copiedAnywhere ? "copied"
                                           : "in_place";
  if (me != sampler)
    return;
  // [batch, steps], row-major from the step-major list.
  s.generated.dtype = DType::I64;
  s.generated.shape = {batch, steps};
  s.generated.bytes.resize(static_cast<std::size_t>(batch * steps) *
                           sizeof(std::int64_t));
  auto *out = reinterpret_cast<std::int64_t *>(s.generated.bytes.data());
  for (int t = 0; t < steps; ++t)
    for (std::int64_t b = 0; b < batch; ++b)
      out[b * steps + t] = generated[t * batch + b];
  s.writesGenerated = true;

  double prefillMs = stepMs.front();
  std::vector<double> decode(stepMs.begin() + 1, stepMs.end());
  double decodeMs = 0;
  for (double d : decode)
    decodeMs += d;
  double prefillRate = prefillMs > 0 ? promptTokens / (prefillMs / 1e3) : 0;
  double decodeRate = decodeMs > 0 ? decodedTokens / (decodeMs / 1e3) : 0;
  std::string stopList;
  for (std::int64_t t : o.stopTokens)
    stopList += (stopList.empty() ? "" : ", ") + std::to_string(t);
  if (o.jsonl)
    std::printf("{\"summary\": {\"sequences\": %lld, \"steps\": %d, "
                "\"time_to_first_token_ms\": %.3f, \"prefill_tokens_per_s\": "
                "%.1f, \"decode_tokens_per_s\": %.1f, \"token_latency_p50_ms\": "
                "%.3f, \"token_latency_p99_ms\": %.3f, \"kv_cache\": \"%s\", "
                "\"stop_tokens\": [%s]}}\n",
                static_cast<long long>(batch), steps, prefillMs, prefillRate,
                decodeRate, percentile(decode, 0.5), percentile(decode, 0.99),
                cacheMode, stopList.c_str());
  else
    std::printf("meshc generate: %lld sequence(s), %d step(s)%s; time to "
                "first token %.2f ms; prefill %.1f tokens/s; decode %.1f "
                "tokens/s; per token p50 %.2f ms, p99 %.2f ms\n",
                static_cast<long long>(batch), steps,
                !cached ? " (no KV cache: every step recomputes the whole "
                          "sequence)"
                : copiedAnywhere
                    ? " (KV cache on the ranks, copied once per step)"
                    : " (KV cache on the ranks, written in place)",
                prefillMs, prefillRate, decodeRate, percentile(decode, 0.5),
                percentile(decode, 0.99));
  std::fflush(stdout);
}

} // namespace meshc::rt
