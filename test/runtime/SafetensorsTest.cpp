//===- SafetensorsTest.cpp - safetensors reading, writing, validation -----===//
#include "TestUtil.h"
#include "runtime/Safetensors.h"

#include <catch2/catch.hpp>
#include <cstring>

using namespace tgrt;
using namespace tgrt::test;

static TensorMap sample() {
  TensorMap m;
  Tensor w = Tensor::zeros(DType::F32, {2, 3});
  for (int i = 0; i < 6; ++i)
    w.as<float>()[i] = 0.5f * i - 1;
  m["w"] = w;
  m["w.exp_avg"] = Tensor::zeros(DType::BF16, {3});
  m["step"] = Tensor::scalarI64(42);
  m["mask"] = Tensor::zeros(DType::I1, {4});
  m["mask"].bytes[2] = 1;
  m["h"] = Tensor::zeros(DType::F16, {0, 5});
  return m;
}

/// A safetensors image with the given header text and data bytes.
static std::string image(const std::string &header, const std::string &data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

static std::string parseError(const std::string &bytes) {
  TensorMap m;
  std::string err;
  REQUIRE_FALSE(parseSafetensors(bytes, m, err));
  CHECK(err.find('\n') == std::string::npos);
  return err;
}

TEST_CASE("safetensors: round trip with metadata", "[runtime][safetensors]") {
  TempDir dir;
  TensorMap in = sample(), out;
  std::string err;
  REQUIRE(writeSafetensors(dir.file("c.safetensors"), in, err, {{"k", "v"}}));
  Metadata meta;
  REQUIRE(readSafetensors(dir.file("c.safetensors"), out, err, &meta));
  REQUIRE(out.size() == in.size());
  for (const auto &[name, t] : in) {
    INFO(name);
    CHECK(out.at(name).dtype == t.dtype);
    CHECK(out.at(name).shape == t.shape);
    CHECK(out.at(name).bytes == t.bytes);
  }
  CHECK(meta.at("k") == "v");
  CHECK(out.at("step").as<int64_t>()[0] == 42);
  // The header is padded to a multiple of 8 bytes, as the format asks.
  std::string bytes = slurp(dir.file("c.safetensors"));
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
}

TEST_CASE("safetensors: reads a file written by the reference library", "[runtime][safetensors]") {
  // safetensors.torch.save_file({"a": torch.tensor([1., 2.])}) byte for byte.
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  float v[2] = {1, 2};
  TensorMap m;
  std::string err;
  REQUIRE(parseSafetensors(image(header, std::string(reinterpret_cast<char *>(v), 8)), m, err));
  CHECK(m.at("a").as<float>()[1] == 2.0f);
}

TEST_CASE("safetensors: every truncation and corruption is an error", "[runtime][safetensors]") {
  std::string full = serializeSafetensors(sample());
  for (size_t n = 0; n < full.size(); ++n) {
    TensorMap m;
    std::string err;
    INFO("truncated to " << n);
    CHECK_FALSE(parseSafetensors(full.substr(0, n), m, err));
  }
  CHECK(parseError("abc") == "truncated: 3 bytes, a safetensors file has at least 8");
  CHECK(parseError(image("{}", "") .substr(0, 9)) ==
        "truncated: the header needs 2 bytes but only 1 follow");
  std::string huge(8, '\xff');
  CHECK(parseError(huge).rfind("header length ", 0) == 0);
  CHECK(parseError(image("[]", "")) == "the header is not a JSON object");
  CHECK(parseError(image("{", "")).rfind("invalid JSON header: byte 1:", 0) == 0);
  CHECK(parseError(image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x")) ==
        "tensor 'a': dtype 'U8' is not supported (F32, F64, BF16, F16, I32, I64, BOOL)");
  CHECK(parseError(image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "xxxx")) ==
        "tensor 'a': shape: dimensions must be non-negative integers");
  CHECK(parseError(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "xxxx")) ==
        "tensor 'a': data_offsets span 4 bytes but F32[2] needs 8");
  CHECK(parseError(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "xxxx")) ==
        "tensor 'a': truncated: data ends at byte 8 of the data section but it has 4 bytes");
  CHECK(parseError(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "xxxx")) ==
        "tensor 'a': data_offsets [4, 0] end before they begin");
  CHECK(parseError(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "xxxx")) ==
        "tensor 'b': data_offsets begin at 0 but the previous tensor ends at 4 "
        "(buffers must not overlap or leave holes)");
  CHECK(parseError(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "xxxxyy")) ==
        "the data section has 6 bytes but the tensors cover 4");
  CHECK(parseError(image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})", "xxxx")) ==
        "tensor 'a': shape [4294967296,4294967296,4294967296] has too many elements");
  CHECK(parseError(image(R"({"__metadata__":{"k":1}})", "")) == "__metadata__.k is not a string");
  CHECK(parseError(image(R"({"a":{"dtype":"F32","shape":[1]}})", "xxxx")) ==
        "tensor 'a': data_offsets: expected [begin, end] with non-negative integers");
  TensorMap m;
  std::string err;
  CHECK_FALSE(readSafetensors("/nonexistent.safetensors", m, err));
  CHECK(err == "cannot open '/nonexistent.safetensors': No such file or directory");
}
