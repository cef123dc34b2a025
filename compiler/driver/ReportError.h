//===- ReportError.h - One-line errors of meshc's tools ---------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_DRIVER_REPORTERROR_H
#define MESHC_COMPILER_DRIVER_REPORTERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/WithColor.h"

namespace meshc {

/// Prints "<tool>: error: <msg>" and returns the failure status, 1.
inline int reportError(llvm::StringRef tool, const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), tool) << msg << "\n";
  return 1;
}

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_REPORTERROR_H
