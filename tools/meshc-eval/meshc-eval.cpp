//===- meshc-eval.cpp - Run dfg IR with the reference evaluator -----------===//
//
// Part of meshc. All logic lives in compiler/driver/EvalTool.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/EvalTool.h"

int main(int argc, char **argv) { return meshc::runEvalTool(argc, argv); }
