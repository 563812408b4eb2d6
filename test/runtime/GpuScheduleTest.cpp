//===- GpuScheduleTest.cpp - the GPU launch schedule of a manifest --------===//
//
// parseGpuSchedule on a small hand-written schedule, and one corruption per
// check: each is one line naming the field, never an out-of-range buffer
// handed to a device backend.
//
//===----------------------------------------------------------------------===//
#include "runtime/Device.h"
#include "runtime/GpuSchedule.h"
#include "runtime/Json.h"

#include <catch2/catch.hpp>

using namespace tgrt;

namespace {

/// One entry `step(x: f32[4]) -> (y: f32[4])`: a launch of `k` reading x
/// and writing the arena, a copy of a constant, y in the arena.
Json scheduleManifest() {
  Json m;
  std::string err;
  REQUIRE(parseJson(R"({
    "format": 1,
    "entries": {"step": {
      "args": [{"name": "x", "role": "input", "dtype": "f32", "shape": [4]}],
      "results": [{"name": "y", "role": "output", "dtype": "f32", "shape": [4]}]}},
    "gpu": {"targets": ["sm_80"], "schedules": {"sm_80": {
      "constants": [{"hex": "0000803f", "repeat": 4}],
      "entries": {"step": {
        "arena_bytes": 256,
        "steps": [
          {"op": "launch", "kernel": "k", "grid": [1, 1, 1], "block": [4, 1, 1],
           "shared_bytes": 0,
           "params": [{"buffer": "arg", "index": 0, "offset": 0, "bytes": 16},
                      {"buffer": "arena", "offset": 0, "bytes": 16}]},
          {"op": "copy", "src": {"buffer": "const", "index": 0, "offset": 0, "bytes": 16},
           "dst": {"buffer": "arena", "offset": 16, "bytes": 16}}],
        "results": [{"buffer": "arena", "offset": 16, "bytes": 16}]}}}}}
  })",
                    m, err));
  return m;
}

/// The value at a '/'-separated path (numbers index arrays).
Json &at(Json &j, const std::string &path) {
  Json *v = &j;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    std::string key = path.substr(start, end == std::string::npos
                                             ? std::string::npos
                                             : end - start);
    v = v->is_array() ? &(*v)[std::stoul(key)] : &(*v)[key];
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return *v;
}

bool parse(const Json &j, GpuSchedule &s, std::string &err) {
  Manifest m;
  if (!Manifest::parse(dumpJson(j), m, err))
    return false;
  return parseGpuSchedule(m, "sm_80", {"k"}, s, err);
}

} // namespace

TEST_CASE("gpu schedule: a valid schedule parses", "[gpu-schedule]") {
  GpuSchedule s;
  std::string err;
  REQUIRE(parse(scheduleManifest(), s, err));
  REQUIRE(s.entries.size() == 1);
  const GpuEntry *e = s.entry("step");
  REQUIRE(e);
  CHECK(e->arenaBytes == 256);
  REQUIRE(e->steps.size() == 2);
  CHECK(e->steps[0].kernel == "k");
  CHECK(e->steps[0].block[0] == 4);
  CHECK(e->steps[0].params[0].kind == GpuBuffer::Kind::Arg);
  CHECK(e->steps[1].copy);
  REQUIRE(s.constants.size() == 1);
  // 1.0f four times.
  CHECK(s.constants[0] == std::string("\x00\x00\x80\x3f", 4) + std::string("\x00\x00\x80\x3f", 4) +
                             std::string("\x00\x00\x80\x3f", 4) + std::string("\x00\x00\x80\x3f", 4));
  CHECK(s.maxArenaBytes() == 256);
  Manifest m;
  REQUIRE(Manifest::parse(dumpJson(scheduleManifest()), m, err));
  CHECK(gpuTargets(m) == std::vector<std::string>{"sm_80"});
}

TEST_CASE("gpu schedule: PTX kernel names", "[gpu-schedule]") {
  std::string ptx = ".version 8.0\n.target sm_80\n.visible .entry tg_ew_1(\n"
                    "\t.param .u64 p0\n)\n{\n}\n.visible .entry  tg_rr_2 (\n)\n";
  CHECK(ptxKernelNames(ptx) == std::set<std::string>{"tg_ew_1", "tg_rr_2"});
}

TEST_CASE("gpu schedule: every corruption is one line naming the field",
          "[gpu-schedule]") {
  const char *step0 = "/gpu/schedules/sm_80/entries/step/steps/0";
  struct Case {
    std::string pointer; ///< JSON pointer of the value to replace
    Json value;
    std::string message;
  } cases[] = {
      {std::string(step0) + "/params/1/offset", 248,
       "steps[0].params[1]: bytes 248..264 lie outside the arena of 256 bytes"},
      {std::string(step0) + "/params/0/bytes", 20,
       "lie outside argument 'x' (16 bytes)"},
      {std::string(step0) + "/params/0/index", 1, "params[0].index: expected an integer from 0 to 0"},
      {std::string(step0) + "/params/0/buffer", "heap", "expected \"arg\", \"arena\" or \"const\""},
      {std::string(step0) + "/kernel", "missing", "no kernel 'missing' in the artifact's code"},
      {std::string(step0) + "/grid", Json::array({0, 1, 1}), "grid: dimensions must be"},
      {std::string(step0) + "/block", Json::array({64, 32, 1}), "more than 1024 threads"},
      {std::string(step0) + "/shared_bytes", -1, "shared_bytes: expected an integer"},
      {std::string(step0) + "/op", "sync",
       "expected \"launch\", \"copy\", \"repeat\" or a collective"},
      {"/gpu/schedules/sm_80/entries/step/steps/1/src/index", 3,
       "src.index: expected an integer from 0 to 0"},
      {"/gpu/schedules/sm_80/entries/step/steps/1/dst/bytes", 8,
       "differ in size"},
      {"/gpu/schedules/sm_80/entries/step/results", Json::array(),
       "results: expected 1 buffers, one per result of the entry"},
      {"/gpu/schedules/sm_80/entries/step/results/0/bytes", 8,
       "holds 8 bytes but result 'y' has 16"},
      {"/gpu/schedules/sm_80/entries/step/arena_bytes", "big",
       "arena_bytes: expected an integer"},
      {"/gpu/schedules/sm_80/constants/0/hex", "0g", "expected hex digits"},
      {"/gpu/schedules/sm_80/constants/0/hex", "000", "even number of hex digits"},
      {"/gpu/schedules/sm_80/constants/0/repeat", int64_t(1) << 40,
       "the constants exceed 1 GiB"},
      {"/gpu/schedules/sm_80/entries", Json::object(),
       "no schedule for the entry 'step'"},
      {"/gpu/schedules", Json::object(), "gpu.schedules.sm_80: missing"},
  };
  for (const Case &c : cases) {
    Json j = scheduleManifest();
    at(j, c.pointer) = c.value;
    GpuSchedule s;
    std::string err;
    INFO(c.pointer);
    CHECK_FALSE(parse(j, s, err));
    CHECK(err.find(c.message) != std::string::npos);
    CHECK(err.rfind("manifest: gpu", 0) == 0);
    CHECK(err.find('\n') == std::string::npos);
  }
  // An entry the manifest does not have.
  Json j = scheduleManifest();
  j["gpu"]["schedules"]["sm_80"]["entries"]["eval"] =
      j["gpu"]["schedules"]["sm_80"]["entries"]["step"];
  GpuSchedule s;
  std::string err;
  CHECK_FALSE(parse(j, s, err));
  CHECK(err == "manifest: gpu.schedules.sm_80.entries.eval: the manifest has "
               "no entry 'eval'");
}

namespace {
/// The schedule with its two steps wrapped in a repeat of `count`: the
/// launch reads x once per iteration and writes arena bytes 0..16 then
/// 32..48 (stride 32), the copy fills 16..32 and then 48..64.
Json repeatManifest(int64_t count) {
  Json j = scheduleManifest();
  Json &steps = at(j, "/gpu/schedules/sm_80/entries/step/steps");
  steps[0]["params"][1]["stride"] = 32;
  steps[1]["dst"]["stride"] = 32;
  Json repeat = Json::object();
  repeat["op"] = "repeat";
  repeat["count"] = count;
  repeat["steps"] = steps;
  steps = Json::array({repeat});
  return j;
}
} // namespace

TEST_CASE("gpu schedule: a repeat expands into its iterations",
          "[gpu-schedule]") {
  GpuSchedule s;
  std::string err;
  REQUIRE(parse(repeatManifest(3), s, err));
  const GpuEntry *e = s.entry("step");
  REQUIRE(e);
  REQUIRE(e->steps.size() == 6);
  for (int k = 0; k < 3; ++k) {
    INFO("iteration " << k);
    const GpuStep &launch = e->steps[size_t(2 * k)];
    const GpuStep &copy = e->steps[size_t(2 * k + 1)];
    CHECK(launch.kernel == "k");
    CHECK(launch.params[0].offset == 0); // no stride: x every time
    CHECK(launch.params[1].offset == 32 * k);
    CHECK(copy.copy);
    CHECK(copy.src.offset == 0);
    CHECK(copy.dst.offset == 16 + 32 * k);
  }
}

TEST_CASE("gpu schedule: a corrupt repeat is one line", "[gpu-schedule]") {
  const char *rep = "/gpu/schedules/sm_80/entries/step/steps/0";
  struct Case {
    std::string pointer;
    Json value;
    std::string message;
  } cases[] = {
      {std::string(rep) + "/count", 0, "count: expected an integer from 1"},
      {std::string(rep) + "/count", int64_t(1) << 21, "count: expected an integer"},
      {std::string(rep) + "/steps", Json::array(), "expected a non-empty array"},
      // Iteration 8 of the launch writes past the arena (8 iterations fit).
      {std::string(rep) + "/count", 9,
       "steps[0].steps[0] (iteration 8).params[1]: bytes 256..272 lie outside "
       "the arena of 256 bytes"},
      {std::string(rep) + "/steps/0/params/1/stride", -32,
       "is negative in iteration 1 of the repeat"},
      {std::string(rep) + "/steps/0/params/1/stride", "x",
       "stride: expected an integer"},
  };
  for (const Case &c : cases) {
    Json j = repeatManifest(2);
    at(j, c.pointer) = c.value;
    GpuSchedule s;
    std::string err;
    INFO(c.pointer << " = " << dumpJson(c.value));
    CHECK_FALSE(parse(j, s, err));
    CHECK(err.find(c.message) != std::string::npos);
    CHECK(err.find('\n') == std::string::npos);
  }
  // The last of 8 iterations ends exactly at the arena's end.
  GpuSchedule fits;
  std::string why;
  CHECK(parse(repeatManifest(8), fits, why));
  // A repeat in a repeat, and a count whose expansion passes 2^24 steps.
  Json nested = repeatManifest(2);
  Json &body = at(nested, std::string(rep) + "/steps");
  body.push_back(at(nested, rep));
  GpuSchedule s;
  std::string err;
  CHECK_FALSE(parse(nested, s, err));
  CHECK(err.find("a repeat inside a repeat") != std::string::npos);
  Json big = repeatManifest(1 << 20);
  Json &bigBody = at(big, std::string(rep) + "/steps");
  for (int i = 0; i < 18; ++i) // 20 steps x 2^20 > 2^24
    bigBody.push_back(bigBody[0]);
  for (size_t i = 0; i < bigBody.size(); ++i) {
    if (bigBody[i]["op"] == "launch")
      bigBody[i]["params"][1]["stride"] = 0;
    else
      bigBody[i]["dst"]["stride"] = 0;
  }
  CHECK_FALSE(parse(big, s, err));
  CHECK(err.find("expands to more than 2^24 steps") != std::string::npos);
}

namespace {
/// The schedule with the launch's second parameter a TMA descriptor over
/// arena bytes 0..128: four rows of 16 bf16 elements (32-byte rows).
Json tensorMapManifest() {
  Json j = scheduleManifest();
  Json &p = at(j, "/gpu/schedules/sm_80/entries/step/steps/0/params/1");
  p["bytes"] = 128;
  Json map;
  std::string err;
  REQUIRE(parseJson(R"({"dtype": "bf16", "dims": [16, 4], "strides": [32],
    "box": [16, 4], "element_strides": [1, 1], "interleave": "none",
    "swizzle": "128B", "l2_promotion": "256B", "oob_fill": "zero"})",
                    map, err));
  p["tensor_map"] = map;
  return j;
}
} // namespace

TEST_CASE("gpu schedule: a tensor map parameter carries the whole map",
          "[gpu-schedule]") {
  namespace cu = tg::rt::cuda;
  GpuSchedule s;
  std::string err;
  REQUIRE(parse(tensorMapManifest(), s, err));
  const GpuStep &st = s.entry("step")->steps[0];
  REQUIRE(st.maps.size() == 2);
  CHECK_FALSE(st.maps[0]);
  REQUIRE(st.maps[1]);
  // Exactly what the GEMM generators' maps are (TensorMap.h).
  CHECK(*st.maps[1] == cu::tiledMatrixMap(true, 4, 16, 4, 16));
  CHECK(cu::describeTensorMap(*st.maps[1]) ==
        "bf16 16x4 in 16x4 boxes, 128B swizzle");
  // Each of the driver's rules, and the buffer's range, is one line.
  const std::string map = "/gpu/schedules/sm_80/entries/step/steps/0/params/1";
  struct Case {
    std::string pointer;
    Json value;
    std::string message;
  } cases[] = {
      {map + "/tensor_map", 3, "params[1].tensor_map: expected an object"},
      {map + "/tensor_map/dtype", "f8", "tensor_map.dtype: expected one of \"u8\""},
      {map + "/tensor_map/dims", Json::array({16, 4, 1}),
       "tensor_map.strides: expected 2 integers"},
      {map + "/tensor_map/dims", Json::array(), "tensor_map.dims: expected 1 to 5"},
      {map + "/tensor_map/dims/0", int64_t(1) << 33, "dims: expected integers from 1"},
      {map + "/tensor_map/box/0", 300, "box: expected integers from 1 to 256"},
      {map + "/tensor_map/box", Json::array({16}), "box: expected 2 integers"},
      {map + "/tensor_map/element_strides/1", 0,
       "element_strides: expected integers from 1 to 8"},
      {map + "/tensor_map/strides/0", 24,
       "stride 0 is 24 bytes, not a multiple of 16"},
      {map + "/tensor_map/strides/0", 16,
       "stride 0 (16 bytes) is shorter than the dimensions below it"},
      {map + "/tensor_map/box/0", 12, "inner dimension is 24 bytes, not a multiple of 16"},
      {map + "/tensor_map/box/0", 72,
       "inner dimension is 144 bytes, more than the 128B swizzle span"},
      {map + "/tensor_map/swizzle", "256B", "tensor_map.swizzle: expected one of"},
      {map + "/tensor_map/interleave", "32B", "an interleaved map needs rank 3"},
      {map + "/tensor_map/l2_promotion", 3, "l2_promotion: expected one of"},
      {map + "/tensor_map/oob_fill", "inf", "oob_fill: expected one of"},
      {map + "/tensor_map/dims/1", 5,
       "the map (bf16 16x5 in 16x4 boxes, 128B swizzle) reaches past the 128 "
       "bytes of its buffer"},
      {map + "/offset", 8, "offset 8 is not 16-byte aligned"},
  };
  for (const Case &c : cases) {
    Json j = tensorMapManifest();
    at(j, c.pointer) = c.value;
    GpuSchedule bad;
    INFO(c.pointer << " = " << dumpJson(c.value));
    CHECK_FALSE(parse(j, bad, err));
    CHECK(err.find(c.message) != std::string::npos);
    CHECK(err.rfind("manifest: gpu.schedules.sm_80.entries.step.steps[0]."
                    "params[1]",
                    0) == 0);
    CHECK(err.find('\n') == std::string::npos);
  }
  // A NaN fill needs a floating-point type.
  Json j = tensorMapManifest();
  at(j, map + "/tensor_map/dtype") = "u16";
  at(j, map + "/tensor_map/oob_fill") = "nan";
  GpuSchedule bad;
  CHECK_FALSE(parse(j, bad, err));
  CHECK(err.find("NaN fill on an integer type") != std::string::npos);
}

TEST_CASE("gpu schedule: the targets an artifact has", "[gpu-schedule]") {
  std::string err;
  Manifest m;
  REQUIRE(Manifest::parse(dumpJson(scheduleManifest()), m, err));
  ArtifactWriter w;
  REQUIRE(w.addSection("manifest", dumpJson(scheduleManifest()), err));
  auto gpuOnly = Artifact::fromBytes(w.bytes(), "g.tgx", err);
  REQUIRE(gpuOnly);
  CHECK(artifactTargets(*gpuOnly, m) == "sm_80");
  Manifest plain;
  REQUIRE(Manifest::parse(R"({"format": 1, "entries": {}})", plain, err));
  REQUIRE(w.addSection("cpu.so", "x", err));
  auto both = Artifact::fromBytes(w.bytes(), "b.tgx", err);
  REQUIRE(both);
  CHECK(artifactTargets(*both, m) == "cpu, sm_80");
  CHECK(artifactTargets(*both, plain) == "cpu");
  // The emulator refuses an artifact without sm_80 code, naming what it has.
  auto dev = makeEmulatorDevice(*both, plain, err);
  CHECK_FALSE(dev);
  CHECK(err.find("emulator") != std::string::npos);
}

namespace {
/// A data-parallel schedule of 2 ranks: after the launch, a bucket of one
/// all_reduce (arena 0..16 into 16..32), a reduce_scatter of those 4
/// floats into this rank's 2 (32..40), their all_gather (48..64) and the
/// shard of x (64..72).
Json collectiveManifest() {
  Json j = scheduleManifest();
  j["ranks"] = 2;
  std::string err;
  Json steps;
  REQUIRE(parseJson(R"([
    {"op": "all_reduce", "reduce": "mean", "dtype": "f32", "tensors": [
      {"count": 4, "src": {"buffer": "arena", "offset": 0, "bytes": 16},
       "dst": {"buffer": "arena", "offset": 16, "bytes": 16}}]},
    {"op": "reduce_scatter", "reduce": "sum", "dtype": "f32", "tensors": [
      {"count": 2, "src": {"buffer": "arena", "offset": 16, "bytes": 16},
       "dst": {"buffer": "arena", "offset": 32, "bytes": 8}}]},
    {"op": "all_gather", "dtype": "f32", "tensors": [
      {"count": 2, "src": {"buffer": "arena", "offset": 32, "bytes": 8},
       "dst": {"buffer": "arena", "offset": 48, "bytes": 16}}]},
    {"op": "shard", "dtype": "f32", "tensors": [
      {"count": 2, "src": {"buffer": "arg", "index": 0, "offset": 0, "bytes": 16},
       "dst": {"buffer": "arena", "offset": 64, "bytes": 8}}]}
  ])",
                    steps, err));
  Json &list = at(j, "/gpu/schedules/sm_80/entries/step/steps");
  for (const Json &s : steps)
    list.push_back(s);
  return j;
}
} // namespace

TEST_CASE("gpu schedule: collective steps", "[gpu-schedule]") {
  GpuSchedule s;
  std::string err;
  REQUIRE(parse(collectiveManifest(), s, err));
  const GpuEntry *e = s.entry("step");
  REQUIRE(e);
  REQUIRE(e->steps.size() == 6);
  CHECK(s.hasCollectives());
  using Op = GpuCollective::Op;
  const GpuCollective &ar = e->steps[2].collective;
  CHECK(ar.op == Op::AllReduce);
  CHECK(ar.mean);
  CHECK(ar.dtype == DType::F32);
  CHECK(ar.counts == std::vector<int64_t>{4});
  CHECK(ar.dsts[0].offset == 16);
  CHECK_FALSE(e->steps[2].isLaunch());
  CHECK(e->steps[3].collective.op == Op::ReduceScatter);
  CHECK_FALSE(e->steps[3].collective.mean);
  CHECK(e->steps[4].collective.op == Op::AllGather);
  CHECK(e->steps[5].collective.op == Op::Shard);
  CHECK(e->steps[5].collective.srcs[0].kind == GpuBuffer::Kind::Arg);
  CHECK(std::string(collectiveName(Op::ReduceScatter)) == "reduce_scatter");
  GpuSchedule plain;
  REQUIRE(parse(scheduleManifest(), plain, err));
  CHECK_FALSE(plain.hasCollectives());
}

TEST_CASE("gpu schedule: a corrupt collective is one line", "[gpu-schedule]") {
  const std::string ar = "/gpu/schedules/sm_80/entries/step/steps/2";
  const std::string rs = "/gpu/schedules/sm_80/entries/step/steps/3";
  struct Case {
    std::string pointer;
    Json value;
    std::string message;
  } cases[] = {
      {ar + "/reduce", "max", "steps[2].reduce: expected \"sum\" or \"mean\""},
      {ar + "/dtype", "i32", "dtype: expected \"f32\", \"bf16\" or \"f16\""},
      {ar + "/tensors", Json::array(), "expected an array of 1 to 4096 tensors"},
      {ar + "/tensors/0/count", 0, "tensors[0].count: expected an integer from 1"},
      {ar + "/tensors/0/count", 3,
       "src and dst hold 16 and 16 bytes, but all_reduce of 3 f32 over 2 "
       "ranks needs 12 and 12"},
      {ar + "/tensors/0/dst/offset", 8, "tensors[0]: src and dst overlap"},
      {ar + "/tensors/0/dst/offset", 250, "lie outside the arena"},
      {rs + "/tensors/0/dst/bytes", 16,
       "reduce_scatter of 2 f32 over 2 ranks needs 16 and 8"},
      {"/gpu/schedules/sm_80/entries/step/steps/4/tensors/0/dst/bytes", 8,
       "all_gather of 2 f32 over 2 ranks needs 8 and 16"},
      {"/gpu/schedules/sm_80/entries/step/steps/5/tensors/0/src/bytes", 8,
       "shard of 2 f32 over 2 ranks needs 16 and 8"},
      {rs + "/tensors/0/src", Json(), "needs src and dst"},
  };
  for (const Case &c : cases) {
    Json j = collectiveManifest();
    at(j, c.pointer) = c.value;
    if (c.value.is_null())
      at(j, rs + "/tensors/0").erase("src");
    GpuSchedule s;
    std::string err;
    INFO(c.pointer << " = " << dumpJson(c.value));
    CHECK_FALSE(parse(j, s, err));
    CHECK(err.find(c.message) != std::string::npos);
    CHECK(err.find('\n') == std::string::npos);
  }
  // Two tensors of one bucket run as one NCCL group: one may not write
  // where the other reads.
  Json j = collectiveManifest();
  Json &tensors = at(j, ar + "/tensors");
  Json second = tensors[0];
  second["src"]["offset"] = 80;
  second["dst"]["offset"] = 8;
  tensors.push_back(second);
  GpuSchedule s;
  std::string err;
  CHECK_FALSE(parse(j, s, err));
  CHECK(err.find("tensors[1]: overlaps tensor 0 of the same bucket") !=
        std::string::npos);
}
