//===- LegalizationTable.cpp - (domain, op, since-version) lookup ---------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "compiler/import/OnnxModel.h"

#include <algorithm>

using namespace llvm;

namespace meshc::onnximport {

static std::string key(StringRef domain, StringRef opType) {
  return (domainName(domain) + "/" + opType).str();
}

const LegalizationTable &LegalizationTable::get() {
  static const LegalizationTable table = [] {
    LegalizationTable t;
    populateElementwiseLegalizations(t);
    populateContractionLegalizations(t);
    populateLayoutLegalizations(t);
    populateStructureLegalizations(t);
    populateExpertLegalizations(t);
    populateQuantizedLegalizations(t);
    populateNormalizationLegalizations(t);
    populateRotaryLegalizations(t);
    populateAttentionLegalizations(t);
    populatePackedAttentionLegalizations(t);
    populateShapeLegalizations(t);
    return t;
  }();
  return table;
}

void LegalizationTable::add(StringRef domain, StringRef opType,
                            int sinceVersion, LegalizeFn fn) {
  std::vector<Entry> &list = entries_[key(domain, opType)];
  list.push_back({sinceVersion, fn});
  std::sort(list.begin(), list.end(), [](const Entry &a, const Entry &b) {
    return a.sinceVersion < b.sinceVersion;
  });
}

std::vector<std::tuple<std::string, std::string, int>>
LegalizationTable::entries() const {
  std::vector<std::tuple<std::string, std::string, int>> all;
  for (const auto &entry : entries_) {
    auto [domain, opType] = entry.getKey().split('/');
    for (const Entry &e : entry.getValue())
      all.emplace_back(domain.str(), opType.str(), e.sinceVersion);
  }
  std::sort(all.begin(), all.end());
  return all;
}

LegalizeFn LegalizationTable::lookup(StringRef domain, StringRef opType,
                                     int64_t version, int *lowest) const {
  if (lowest)
    *lowest = 0;
  auto it = entries_.find(key(domain, opType));
  if (it == entries_.end())
    return nullptr;
  if (lowest)
    *lowest = it->second.front().sinceVersion;
  LegalizeFn best = nullptr;
  for (const Entry &e : it->second)
    if (e.sinceVersion <= version)
      best = e.fn;
  return best;
}

} // namespace meshc::onnximport
