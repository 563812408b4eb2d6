//===- CudaTensorMapTest.cpp - TMA descriptors through the CUDA device ----===//
//
// The CUDA device (runtime/cuda/CudaDevice.cpp) on the fake driver
// (FakeCudaEmu.cpp): a schedule whose launches take tensor maps, each
// kernel copying the 128 bytes its map parameter points at into the
// entry's result. So the test sees exactly what a kernel receives: a device
// pointer to a map encoded with the manifest's arguments over the right
// address, on the checked first call and in both captured graphs (one per
// staging half, whose input map differs), each map encoded once per buffer.
// A driver refusing to encode is one line naming the kernel and the map.
//
//===----------------------------------------------------------------------===//
#include "runtime/Artifact.h"
#include "runtime/Device.h"
#include "runtime/Json.h"
#include "runtime/Manifest.h"
#include "runtime/cuda/TensorMap.h"
#include "runtime/emulator/TensorMap.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace tgrt;
namespace cu = tg::rt::cuda;

#if defined(TG_FAKE_CUDA_EMU_PATH)
namespace {

/// k(map, out): 16 threads copy the 128 bytes at `map` to `out`.
const char *kPtx = R"(.version 8.0
.target sm_80
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1
)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<10>;
	ld.param.u64 %rd1, [k_param_0];
	ld.param.u64 %rd2, [k_param_1];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd5, %r1, 8;
	add.s64 %rd6, %rd3, %rd5;
	ld.global.u64 %rd7, [%rd6];
	add.s64 %rd8, %rd4, %rd5;
	st.global.u64 [%rd8], %rd7;
	ret;
}
)";

/// A fat binary of one uncompressed PTX image for sm_<arch>.
std::string fatbin(uint32_t arch) {
  std::string ptx = std::string(kPtx) + '\0';
  ptx.resize((ptx.size() + 7) / 8 * 8, '\0');
  std::string image(64, '\0');
  auto put = [](std::string &s, size_t at, auto v) {
    std::memcpy(s.data() + at, &v, sizeof v);
  };
  put(image, 0, uint16_t(1));  // PTX
  put(image, 4, uint32_t(64)); // header bytes
  put(image, 8, uint64_t(ptx.size()));
  put(image, 28, arch);
  std::string out(16, '\0');
  put(out, 0, uint32_t(0xBA55ED50u));
  put(out, 4, uint16_t(1));
  put(out, 6, uint16_t(16));
  put(out, 8, uint64_t(image.size() + ptx.size()));
  return out + image + ptx;
}

/// step(x: bf16[4, 16]) -> (y: f32[64]): k over a map of x into y's first
/// 128 bytes (arena 256..384), then k over a map of arena 0..128 into its
/// last 128 (arena 384..512); y is arena 256..512.
std::string manifest(const std::string &target) {
  std::string map = R"("dtype": "bf16", "dims": [16, 4], "strides": [32],
      "box": [16, 4], "element_strides": [1, 1], "interleave": "none",
      "swizzle": "128B", "l2_promotion": "256B", "oob_fill": "zero")";
  auto launch = [&](const std::string &mapped, int out) {
    return R"({"op": "launch", "kernel": "k", "grid": [1, 1, 1],
      "block": [16, 1, 1], "shared_bytes": 0, "params": [)" +
           mapped.substr(0, mapped.size() - 1) + ", \"tensor_map\": {" + map +
           "}}, " + R"({"buffer": "arena", "offset": )" + std::to_string(out) +
           R"(, "bytes": 128}]})";
  };
  return R"({"format": 1, "entries": {"step": {
    "args": [{"name": "x", "role": "input", "dtype": "bf16", "shape": [4, 16]}],
    "results": [{"name": "y", "role": "output", "dtype": "f32", "shape": [64]}]}},
    "gpu": {"targets": [")" +
         target + R"("], "schedules": {")" + target + R"(": {
    "constants": [], "entries": {"step": {"arena_bytes": 512, "steps": [)" +
         launch(R"({"buffer": "arg", "index": 0, "offset": 0, "bytes": 128})", 256) +
         ", " +
         launch(R"({"buffer": "arena", "offset": 0, "bytes": 128})", 384) +
         R"(], "results": [{"buffer": "arena", "offset": 256, "bytes": 256}]}}}}}})";
}

struct Loaded {
  std::unique_ptr<Artifact> artifact;
  Manifest manifest;
};

bool load(const std::string &target, uint32_t arch, Loaded &out,
          std::string &err) {
  ArtifactWriter w;
  std::string m = manifest(target);
  if (!w.addSection("manifest", m, err) ||
      !w.addSection("gpu.fatbin", fatbin(arch), err) ||
      !Manifest::parse(m, out.manifest, err))
    return false;
  out.artifact = Artifact::fromBytes(w.bytes(), "tma.tgx", err);
  return out.artifact != nullptr;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("cuda device: kernels receive the manifest's tensor maps",
          "[cuda][fake][tma]") {
  std::string log = "cuda-tma-" + std::to_string(getpid()) + ".log";
  std::remove(log.c_str());
  setenv("TG_CUDA_LIBRARY", TG_FAKE_CUDA_EMU_PATH, 1);
  setenv("TG_FAKE_CUDA_CC", "90", 1);
  setenv("TG_FAKE_CUDA_LOG", log.c_str(), 1);
  Loaded a;
  std::string err;
  REQUIRE(load("sm_90a", 90, a, err));
  std::unique_ptr<Device> dev = makeCudaDevice(*a.artifact, a.manifest, err);
  INFO(err);
  REQUIRE(dev);
  uint8_t none = 0;
  REQUIRE(dev->bindState(&none, 0, err));
  const EntrySpec &step = *a.manifest.entry("step");
  cu::TensorMapArgs expected = cu::tiledMatrixMap(true, 4, 16, 4, 16);
  std::vector<uint64_t> xAddress;
  for (int call = 0; call < 4; ++call) {
    INFO("call " << call);
    std::vector<uint16_t> x(64, uint16_t(call));
    std::vector<uint8_t> y(256, 0xAA);
    REQUIRE(dev->run(step, {x.data(), y.data()}, err));
    tgrt::emu::TmaDescriptor xMap, arenaMap;
    REQUIRE(tgrt::emu::decodeTensorMap(y.data(), xMap) == "");
    REQUIRE(tgrt::emu::decodeTensorMap(y.data() + 128, arenaMap) == "");
    for (const tgrt::emu::TmaDescriptor *d : {&xMap, &arenaMap}) {
      CHECK(int(d->dataType) == expected.dataType);
      CHECK(d->rank == expected.rank);
      for (unsigned i = 0; i < 2; ++i) {
        CHECK(d->globalDim[i] == expected.dims[i]);
        CHECK(d->boxDim[i] == expected.box[i]);
        CHECK(d->elementStrides[i] == expected.elementStrides[i]);
      }
      CHECK(d->globalStrides[0] == expected.strides[0]);
      CHECK(int(d->swizzle) == expected.swizzle);
      CHECK(int(d->l2Promotion) == expected.l2Promotion);
      CHECK(int(d->oobFill) == expected.oobFill);
    }
    CHECK(xMap.globalAddress % 256 == 0);
    xAddress.push_back(xMap.globalAddress);
    // The map over x reads the staged batch of this call.
    CHECK(std::memcmp(reinterpret_cast<const void *>(xMap.globalAddress),
                      x.data(), 128) == 0);
  }
  // Calls alternate between the two staging halves: two maps of x.
  CHECK(xAddress[0] == xAddress[2]);
  CHECK(xAddress[1] == xAddress[3]);
  CHECK(xAddress[0] != xAddress[1]);
  dev.reset();
  std::string text = slurp(log);
  // Once per buffer: x in each half, the arena's once; none in a capture.
  CHECK(count(text, "encode ") == 3);
  CHECK(count(text, "encode refused") == 0);
  CHECK(count(text, "encode bf16 dims [16,4] strides [32] box [16,4] "
                    "element_strides [1,1] interleave none swizzle 128B l2 "
                    "256B fill zero at +") == 3);
  // x's second map is in the second staging half (256 bytes on).
  size_t secondHalf = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    secondHalf += line.rfind("encode ", 0) == 0 &&
                  line.size() > 5 && line.substr(line.size() - 5) == " +256";
  CHECK(secondHalf == 1);
  // Each kernel run received its map, as the log decodes it.
  CHECK(count(text, "tensormap k #0 bf16 dims [16,4]") == 8);
  CHECK(count(text, "begin capture") == 2);
  CHECK(count(text, "graph launch") == 3);
  std::remove(log.c_str());
  unsetenv("TG_FAKE_CUDA_LOG");
  unsetenv("TG_FAKE_CUDA_CC");
  unsetenv("TG_CUDA_LIBRARY");
}

TEST_CASE("cuda device: a map the driver refuses names kernel and map",
          "[cuda][fake][tma]") {
  setenv("TG_CUDA_LIBRARY", TG_FAKE_CUDA_EMU_PATH, 1);
  // Tensor maps need compute capability 9.0: the fake refuses them below.
  setenv("TG_FAKE_CUDA_CC", "80", 1);
  unsetenv("TG_FAKE_CUDA_LOG");
  Loaded a;
  std::string err;
  REQUIRE(load("sm_80", 80, a, err));
  std::unique_ptr<Device> dev = makeCudaDevice(*a.artifact, a.manifest, err);
  INFO(err);
  REQUIRE(dev);
  uint8_t none = 0;
  REQUIRE(dev->bindState(&none, 0, err));
  std::vector<uint16_t> x(64, 1);
  std::vector<uint8_t> y(256, 0);
  CHECK_FALSE(dev->run(*a.manifest.entry("step"), {x.data(), y.data()}, err));
  CHECK(err == "step: kernel 'k' (step 1 of 2): tensor map of parameter #0 "
               "(bf16 16x4 in 16x4 boxes, 128B swizzle over argument 0 bytes "
               "0..128): cuTensorMapEncodeTiled failed: "
               "CUDA_ERROR_INVALID_VALUE (code 1): fake driver error");
  unsetenv("TG_FAKE_CUDA_CC");
  unsetenv("TG_CUDA_LIBRARY");
}
#endif
