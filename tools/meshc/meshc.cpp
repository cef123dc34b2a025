//===- meshc.cpp - The meshc command-line tool ----------------------------===//
//
// Part of meshc. All logic lives in compiler/driver.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Driver.h"

int main(int argc, char **argv) { return meshc::runDriver(argc, argv); }
