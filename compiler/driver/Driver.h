//===- Driver.h - The meshc command-line driver -----------------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_DRIVER_DRIVER_H
#define MESHC_COMPILER_DRIVER_DRIVER_H

namespace meshc {

/// Runs `meshc <command> ...`; returns the process exit status (0 on
/// success, 1 on any error, after printing one diagnostic to stderr).
int runDriver(int argc, char **argv);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_DRIVER_H
