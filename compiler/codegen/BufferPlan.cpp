//===- BufferPlan.cpp - Static arena planning by liveness -----------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/BufferPlan.h"

#include <algorithm>
#include <numeric>

namespace meshc::codegen {

BufferPlan planBuffers(const std::vector<BufferRequest> &requests,
                       std::uint64_t alignment) {
  auto align = [&](std::uint64_t n) {
    return (n + alignment - 1) & ~(alignment - 1);
  };
  BufferPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by start, so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes)
      return requests[a].bytes > requests[b].bytes;
    return requests[a].first < requests[b].first;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const BufferRequest &r = requests[i];
    // The placed buffers live at the same time, by offset.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;
    for (size_t j : placed)
      if (requests[j].first <= r.last && r.first <= requests[j].last)
        busy.emplace_back(plan.offsets[j],
                          plan.offsets[j] + align(requests[j].bytes));
    std::sort(busy.begin(), busy.end());
    std::uint64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + align(r.bytes) <= begin)
        break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.peak = std::max(plan.peak, offset + align(r.bytes));
    placed.push_back(i);
  }
  return plan;
}

} // namespace meshc::codegen
