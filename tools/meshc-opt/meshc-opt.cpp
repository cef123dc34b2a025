//===- meshc-opt.cpp - meshc's pass driver --------------------------------===//
//
// Part of meshc. Parses dfg IR, runs meshc passes on it and prints the result;
// the tool behind the lit tests.
//
//===----------------------------------------------------------------------===//
#include "compiler/tools/init_meshc.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  meshc::registerAllMeshcDialects(registry);
  meshc::registerAllMeshcPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "meshc optimizer driver: dfg IR in, dfg IR out\n", registry));
}
