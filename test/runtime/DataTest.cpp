//===- DataTest.cpp - IDX, Fashion-MNIST, token files and batching --------===//
#include "TestUtil.h"
#include "runtime/Data.h"

#include <catch2/catch.hpp>
#include <zlib.h>

using namespace tgrt;
using namespace tgrt::test;

/// An IDX image of unsigned bytes with the given dimensions.
static std::string idx(const std::vector<uint32_t> &dims, const std::string &data,
                       uint8_t type = 0x08) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int i = 3; i >= 0; --i)
      s += static_cast<char>(d >> (8 * i));
  return s + data;
}

static void gzipTo(const std::string &path, const std::string &data) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(gzwrite(f, data.data(), static_cast<unsigned>(data.size())) ==
          static_cast<int>(data.size()));
  gzclose(f);
}

TEST_CASE("IDX: reads a generated gzip file", "[runtime][data]") {
  TempDir dir;
  std::string pixels;
  for (int i = 0; i < 2 * 3 * 4; ++i)
    pixels += static_cast<char>(i * 10);
  gzipTo(dir.file("a.gz"), idx({2, 3, 4}, pixels));
  IdxArray a;
  std::string err;
  REQUIRE(readIdx(dir.file("a.gz"), a, err));
  CHECK(a.type == 0x08);
  CHECK(a.dims == std::vector<int64_t>{2, 3, 4});
  CHECK(std::string(a.data.begin(), a.data.end()) == pixels);
  // Uncompressed works too.
  spit(dir.file("a.idx"), idx({2, 3, 4}, pixels));
  REQUIRE(readIdx(dir.file("a.idx"), a, err));
  CHECK(a.data.size() == 24);
}

TEST_CASE("IDX: corrupt files are one-line errors", "[runtime][data]") {
  TempDir dir;
  IdxArray a;
  std::string err, p = dir.file("b.gz");
  gzipTo(p, idx({2, 3}, "abc"));
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err == p + ": truncated: expected 6 data bytes, found 3");
  gzipTo(p, idx({2}, "abc"));
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err == p + ": unexpected data after 2 data bytes");
  gzipTo(p, "\x01\x02\x08\x01");
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err == p + ": not an IDX file (magic 01 02 08 01)");
  gzipTo(p, idx({2}, "ab", 0x07));
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err == p + ": not an IDX file (magic 00 00 07 01)");
  gzipTo(p, std::string("\0\0\x08\x02\0\0", 6));
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err == p + ": truncated: the IDX header ends inside dimension 0");
  gzipTo(p, "");
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err == p + ": truncated: the IDX header needs 4 bytes, found 0");
  // A gzip stream cut short.
  gzipTo(p, idx({1000}, std::string(1000, 'x')));
  std::string gz = slurp(p);
  spit(p, gz.substr(0, gz.size() / 2));
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err.rfind(p + ": ", 0) == 0);
  CHECK(err.find('\n') == std::string::npos);
  CHECK_FALSE(readIdx(dir.file("missing.gz"), a, err));
  CHECK(err == "cannot open '" + dir.file("missing.gz") + "': No such file or directory");
}

TEST_CASE("IDX: the installed Fashion-MNIST headers", "[runtime][data]") {
  std::string base = std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz";
  if (access(base.c_str(), R_OK) != 0) {
    WARN("Fashion-MNIST is not installed; skipped");
    return;
  }
  IdxArray a;
  std::string err;
  REQUIRE(readIdx(base, a, err, /*headerOnly=*/true));
  CHECK(a.dims == std::vector<int64_t>{60000, 28, 28});
  REQUIRE(readIdx(std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz", a, err));
  CHECK(a.dims == std::vector<int64_t>{10000});
  Dataset test;
  REQUIRE(loadFashionMnist(kFashionMnistDir, false, test, err));
  CHECK(test.size() == 10000);
  CHECK(test.inputs.shape == std::vector<int64_t>{10000, 28, 28});
  float lo = 1, hi = 0;
  for (uint64_t i = 0; i < test.inputs.numel(); ++i) {
    lo = std::min(lo, test.inputs.as<float>()[i]);
    hi = std::max(hi, test.inputs.as<float>()[i]);
  }
  CHECK(lo == 0.0f);
  CHECK(hi == 1.0f);
}

TEST_CASE("token files and windows", "[runtime][data]") {
  TempDir dir;
  std::string bytes;
  for (int i = 0; i < 11; ++i) {
    bytes += static_cast<char>(i);
    bytes += static_cast<char>(i == 10 ? 1 : 0);
  }
  spit(dir.file("t.u16"), bytes);
  std::vector<uint32_t> tok;
  std::string err;
  REQUIRE(readTokenFile(dir.file("t.u16"), 2, tok, err));
  REQUIRE(tok.size() == 11);
  CHECK(tok[10] == 266);
  CHECK(tokenBatches(tok.size(), 2, 2) == 2);
  CHECK(tokenBatches(tok.size(), 2, 5) == 1);
  Tensor x, y;
  tokenBatch(tok, 1, 2, 2, x, y);
  CHECK(x.shape == std::vector<int64_t>{2, 2});
  CHECK(std::vector<int64_t>(x.as<int64_t>(), x.as<int64_t>() + 4) ==
        std::vector<int64_t>{4, 5, 6, 7});
  CHECK(std::vector<int64_t>(y.as<int64_t>(), y.as<int64_t>() + 4) ==
        std::vector<int64_t>{5, 6, 7, 8});
  CHECK_FALSE(readTokenFile(dir.file("t.u16"), 4, tok, err));
  CHECK(err == dir.file("t.u16") + ": 22 bytes is not a whole number of uint32 tokens");
}

TEST_CASE("rows are sliced, reshaped, converted and wrapped", "[runtime][data]") {
  Tensor all = Tensor::zeros(DType::I64, {5, 2});
  for (int i = 0; i < 10; ++i)
    all.as<int64_t>()[i] = i;
  Tensor out;
  std::string err;
  REQUIRE(sliceRows(all, 3, 3, DType::I32, {3, 1, 2}, out, err));
  CHECK(out.dtype == DType::I32);
  CHECK(std::vector<int32_t>(out.as<int32_t>(), out.as<int32_t>() + 6) ==
        std::vector<int32_t>{6, 7, 8, 9, 0, 1});
  CHECK_FALSE(sliceRows(all, 0, 2, DType::I64, {2, 3}, out, err));
  CHECK(err == "cannot shape rows of [5,2] into [2,3]");
  Tensor f = Tensor::zeros(DType::F32, {2});
  f.as<float>()[0] = 1.5f;
  REQUIRE(sliceRows(f, 0, 2, DType::BF16, {2}, out, err));
  CHECK(out.at(0) == 1.5);
  CHECK(tgc::halfToFloat(tgc::floatToHalf(0.333f)) == Approx(0.333f).epsilon(1e-3));
  CHECK(tgc::halfToFloat(tgc::floatToHalf(1e-6f)) == Approx(1e-6f).epsilon(0.05));
  CHECK(tgc::halfToFloat(tgc::floatToHalf(70000.0f)) == INFINITY);
}

TEST_CASE("one DType: names, sizes and the 16-bit encodings", "[runtime][dtype]") {
  for (tgc::DType t : tgc::kAllDTypes) {
    INFO(tgc::dtypeName(t));
    CHECK(tgc::parseDType(tgc::dtypeName(t)) == t);
    DType back;
    REQUIRE(parseSafetensorsDType(dtypeSafetensorsName(t), back));
    CHECK(back == t);
  }
  CHECK_FALSE(tgc::parseDType("f8"));
  CHECK(tgc::dtypeSize(DType::BF16) == 2);
  CHECK(tgc::dtypeSize(DType::I1) == 1);
  CHECK(tgc::isFloat(DType::F64));
  CHECK_FALSE(tgc::isInteger(DType::I1));
  // bf16: round to nearest even at the 16-bit boundary; NaN stays NaN.
  CHECK(tgc::floatToBf16(1.0f) == 0x3f80);
  CHECK(tgc::floatToBf16(tgc::bf16ToFloat(0x3f80) + 0x1p-8f) == 0x3f80); // tie, even
  CHECK(tgc::floatToBf16(tgc::bf16ToFloat(0x3f81) + 0x1p-8f) == 0x3f82); // tie, even
  CHECK(std::isnan(tgc::bf16ToFloat(tgc::floatToBf16(NAN))));
  CHECK(tgc::floatToBf16(3.4e38f) == 0x7f80); // rounds past the largest: inf
  // f16: every bit pattern but NaN survives decode and encode.
  for (uint32_t h = 0; h < 0x10000; ++h)
    if ((h & 0x7c00) != 0x7c00 || (h & 0x3ff) == 0)
      REQUIRE(tgc::floatToHalf(tgc::halfToFloat(uint16_t(h))) == h);
}

TEST_CASE("IDX: sizes are checked against the file before allocating", "[runtime][data]") {
  TempDir dir;
  IdxArray a;
  std::string err, p = dir.file("big.idx");
  // A plain header claiming 4 billion items in an 8-byte file.
  spit(p, idx({4000000000u}, ""));
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err == p + ": truncated: the header claims 4000000000 data bytes but the file has 8 bytes");
  // Compressed: more than gzip's best ratio could hold.
  gzipTo(p, idx({3000000000u}, "abc"));
  CHECK_FALSE(readIdx(p, a, err));
  CHECK(err.rfind(p + ": truncated: the header claims 3000000000 data bytes but the file has ", 0) == 0);
  CHECK(err.find(" bytes of gzip data") != std::string::npos);
  // Devices have no size to check: refused, not read until memory runs out.
  CHECK_FALSE(readIdx("/dev/zero", a, err));
  CHECK(err == "'/dev/zero' is not a regular file");
  std::vector<uint32_t> tok;
  CHECK_FALSE(readTokenFile("/dev/zero", 2, tok, err));
  CHECK(err == "'/dev/zero' is not a regular file");
  CHECK_FALSE(fitsInMemory(uint64_t(1) << 62, "the data", err));
  CHECK(err.rfind("the data needs 4611686018427387904 bytes, more than this machine's ", 0) == 0);
}

TEST_CASE("index ranges: labels and token ids", "[runtime][data]") {
  std::string err;
  Tensor y = Tensor::zeros(DType::I64, {4});
  y.as<int64_t>()[2] = 10;
  IndexRange r{10, false, 0};
  CHECK_FALSE(checkIndices(y, r, "y.safetensors: tensor 'labels'", "labels", err));
  CHECK(err == "y.safetensors: tensor 'labels': value 10 at index 2 is outside [0, 10), "
               "the range of the model's input 'labels'");
  CHECK(checkIndices(y, IndexRange{11, false, 0}, "f", "labels", err));
  CHECK(checkIndices(y, IndexRange{}, "f", "labels", err)); // unknown bound
  y.as<int64_t>()[2] = -100;
  CHECK_FALSE(checkIndices(y, r, "f", "labels", err));
  CHECK(err == "f: value -100 at index 2 is outside [0, 10), the range of the model's input 'labels'");
  CHECK(checkIndices(y, IndexRange{10, true, -100}, "f", "labels", err));
  y.as<int64_t>()[1] = -1;
  CHECK_FALSE(checkIndices(y, IndexRange{10, true, -100}, "f", "labels", err));
  CHECK(err == "f: value -1 at index 1 is outside [0, 10) (or the ignore_index -100), the "
               "range of the model's input 'labels'");
  Tensor y32 = Tensor::zeros(DType::I32, {3});
  y32.as<int32_t>()[1] = 7;
  CHECK_FALSE(checkIndices(y32, IndexRange{5, false, 0}, "f", "t", err));
  CHECK(err.rfind("f: value 7 at index 1 ", 0) == 0);
  std::vector<uint32_t> tok{1, 2, 50257, 3};
  CHECK_FALSE(checkIndices(tok, IndexRange{50257, false, 0}, "t.u16", "tokens", err));
  CHECK(err == "t.u16: value 50257 at index 2 is outside [0, 50257), the range of the "
               "model's input 'tokens'");
  CHECK(checkIndices(tok, IndexRange{50258, false, 0}, "t.u16", "tokens", err));
}
