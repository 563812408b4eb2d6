//===- CatchMain.cpp - the one Catch2 main ----------------------*- C++ -*-===//
//
// Compiled once into tg_catch_main; every unit-test executable links it.
//
//===----------------------------------------------------------------------===//
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
