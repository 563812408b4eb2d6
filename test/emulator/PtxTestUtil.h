//===- PtxTestUtil.h - hand-written PTX in the emulator's tests -*- C++ -*-===//
//
// Parsing helpers shared by the tests of hand-written PTX (SimtTest.cpp,
// Sm90Test.cpp). Header-only; the emulator ignores .target.
//
//===----------------------------------------------------------------------===//
#ifndef TG_TEST_EMULATOR_PTXTESTUTIL_H
#define TG_TEST_EMULATOR_PTXTESTUTIL_H

#include "runtime/emulator/Emulator.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

namespace ptxtest {

/// The module directives every hand-written kernel starts with.
inline const char *kHeader = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// The parse error of `ptx`, checked to be one line.
inline std::string parseError(const std::string &ptx) {
  std::string err;
  auto m = tgrt::emu::PtxModule::parse(ptx, err);
  CHECK(!m);
  CHECK(err.find('\n') == std::string::npos);
  return err;
}

/// `body` after kHeader, parsed (the test stops if it does not parse).
inline std::unique_ptr<tgrt::emu::PtxModule> parseOk(const std::string &body) {
  std::string err;
  auto m = tgrt::emu::PtxModule::parse(std::string(kHeader) + body, err);
  INFO(err);
  REQUIRE(m);
  return m;
}

} // namespace ptxtest

#endif // TG_TEST_EMULATOR_PTXTESTUTIL_H
