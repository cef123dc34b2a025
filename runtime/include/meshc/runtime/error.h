//===- error.h - How the runtime reports a fatal error ----------*- C++ -*-===//
//
// Part of meshc. Every failure inside a rank executable (a corrupt weight
// file, a wrong input, a token id outside the vocabulary, a collective that
// timed out) ends in one line on stderr naming the rank and the culprit, and a
// non-zero exit of every rank: `fatal` prints the line and calls the handler
// the communication backend installed (MPI_Abort under MPI), so that no peer
// waits forever for a rank that has stopped. No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_ERROR_H
#define MESHC_RUNTIME_ERROR_H

#include <cstdint>
#include <string>
#include <vector>

namespace meshc::rt {

/// Called after the message is printed; must not return. The default exits
/// the process with status 1.
using FatalHandler = void (*)();

/// Installs `handler` (nullptr restores the default).
void setFatalHandler(FatalHandler handler);

/// Sets the prefix of every message, e.g. "rank 3" (empty by default).
void setErrorContext(const std::string &context);

/// "[2, 8, 64]": a shape as messages print it.
std::string formatShape(const std::vector<std::int64_t> &shape);

/// Prints "meshc: <context>: error: <message>" to stderr and stops the
/// process through the installed handler.
[[noreturn]] void fatal(const std::string &message);

/// Prints "meshc: <context>: warning: <message>" to stderr and goes on.
void warn(const std::string &message);

} // namespace meshc::rt

#endif // MESHC_RUNTIME_ERROR_H
