//===- FuzzRuntime.cpp - libFuzzer target for the runtime's parsers -------===//
//
// Every byte string goes through the JSON parser, the manifest parser, the
// .tgx container reader, the safetensors parser, the GPU launch schedule
// and the code signature table. They must return an
// error, never crash, hang or read out of bounds (ASan). A JSON document
// that parses must also survive dump + parse unchanged.
//
//===----------------------------------------------------------------------===//
#include "runtime/Artifact.h"
#include "runtime/GpuSchedule.h"
#include "runtime/Json.h"
#include "runtime/Manifest.h"
#include "runtime/Safetensors.h"
#include "runtime/Signature.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string err;
  tgrt::Json j, back;
  if (tgrt::parseJson(text, j, err)) {
    for (int indent : {-1, 1})
      if (!tgrt::parseJson(tgrt::dumpJson(j, indent), back, err) ||
          !(back == j))
        __builtin_trap();
  }
  tgrt::Manifest m;
  if (tgrt::Manifest::parse(text, m, err)) {
    (void)tgrt::dumpJson(m.describe());
    // The GPU schedules, against the kernels named in the same bytes.
    std::set<std::string> kernels = tgrt::ptxKernelNames(text);
    tgrt::GpuSchedule s;
    for (const std::string &t : tgrt::gpuTargets(m))
      (void)tgrt::parseGpuSchedule(m, t, kernels, s, err);
  }
  if (auto a = tgrt::Artifact::fromBytes(std::string(text), "fuzz.tgx", err))
    for (const auto &s : a->sections())
      (void)a->section(s.name);
  // A signature table that parses renders back to one that parses the same.
  std::vector<tgrt::SignatureEntry> sig, again;
  if (tgrt::parseSignature(text, sig, err)) {
    if (!tgrt::parseSignature(tgrt::renderSignature(sig), again, err) ||
        tgrt::renderSignature(again) != tgrt::renderSignature(sig))
      __builtin_trap();
    (void)tgrt::checkSignature(m, sig, err);
  }
  tgrt::TensorMap t;
  (void)tgrt::parseSafetensors(text, t, err);
  return 0;
}
