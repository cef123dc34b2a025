//===- EvalTool.h - The meshc-eval command-line tool ------------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_DRIVER_EVALTOOL_H
#define MESHC_COMPILER_DRIVER_EVALTOOL_H

namespace meshc {

/// Runs `meshc-eval`: evaluates a dfg function with the reference evaluator
/// on .npy inputs and writes .npy outputs. Returns the exit status.
int runEvalTool(int argc, char **argv);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_EVALTOOL_H
