//===- ExecutorTest.cpp - the CPU executor on a hand-written model --------===//
//
// TinyModel.c stands in for compiled code: softmax regression with momentum
// SGD behind the tgx_<entry>(void **) ABI.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "runtime/Executor.h"
#include "runtime/Safetensors.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <elf.h>

using namespace tgrt;
using namespace tgrt::test;

static std::unique_ptr<Executor> loadTiny(std::unique_ptr<Artifact> &a,
                                          const std::string &manifest = tinyManifest()) {
  std::string err;
  a = Artifact::fromBytes(tinyArtifact(manifest), "tiny.tgx", err);
  REQUIRE(a);
  auto ex = Executor::load(*a, err);
  INFO(err);
  REQUIRE(ex);
  return ex;
}

/// A deterministic batch: pixel values and labels from a small LCG.
static TensorMap batch(uint32_t seed) {
  TensorMap in;
  Tensor x = Tensor::zeros(DType::F32, {32, 1, 28, 28});
  Tensor y = Tensor::zeros(DType::I64, {32});
  for (uint64_t i = 0; i < x.numel(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    x.as<float>()[i] = (seed >> 8) / float(1 << 24);
  }
  for (int i = 0; i < 32; ++i)
    y.as<int64_t>()[i] = i % 10;
  in["x"] = x;
  in["labels"] = y;
  return in;
}

TEST_CASE("executor: init, train_step, eval", "[runtime][executor]") {
  std::unique_ptr<Artifact> a;
  auto ex = loadTiny(a);
  std::string err;
  CHECK(ex->manifest().model == "tiny");
  REQUIRE(ex->init(7, err));
  CHECK(ex->step() == 0);
  CHECK(ex->state().size() == 5);
  CHECK(ex->roleOf("w") == "param");
  CHECK(ex->roleOf("w.momentum") == "state");
  Tensor w0 = ex->state().at("w");
  CHECK(w0.at(0) != 0.0);
  TensorMap in = batch(1);
  double first = 0, loss = 0;
  REQUIRE(ex->trainStep(in, first, err));
  CHECK(first == Approx(std::log(10.0)).epsilon(0.05));
  for (int i = 0; i < 20; ++i)
    REQUIRE(ex->trainStep(in, loss, err));
  CHECK(ex->step() == 21);
  CHECK(loss < first * 0.5);
  TensorMap out;
  REQUIRE(ex->eval(in, out, err));
  REQUIRE(out.count("logits"));
  CHECK(out.at("logits").shape == std::vector<int64_t>{32, 10});
  CHECK(out.at("loss").at(0) < first);
  // The same seed gives the same parameters.
  REQUIRE(ex->init(7, err));
  CHECK(ex->state().at("w").bytes == w0.bytes);
  CHECK(ex->step() == 0);
}

TEST_CASE("executor: forward_grad matches a finite difference", "[runtime][executor]") {
  std::unique_ptr<Artifact> a;
  auto ex = loadTiny(a);
  std::string err;
  REQUIRE(ex->init(3, err));
  TensorMap in = batch(2), out;
  REQUIRE(ex->call("forward_grad", in, out, err));
  double g = out.at("b").at(3), h = 1e-2;
  Tensor b = ex->state().at("b");
  auto lossAt = [&](double delta) {
    Tensor bb = b;
    bb.set(3, b.at(3) + delta);
    REQUIRE(ex->setState("b", bb, err));
    TensorMap o;
    REQUIRE(ex->eval(in, o, err));
    return o.at("loss").at(0);
  };
  CHECK(g == Approx((lossAt(h) - lossAt(-h)) / (2 * h)).margin(1e-3));
}

TEST_CASE("executor: a checkpoint resumes the exact trajectory", "[runtime][executor]") {
  TempDir dir;
  std::unique_ptr<Artifact> a1, a2;
  auto ex1 = loadTiny(a1), ex2 = loadTiny(a2);
  std::string err;
  TensorMap in = batch(5);
  double l1, l2;
  REQUIRE(ex1->init(1, err));
  for (int i = 0; i < 3; ++i)
    REQUIRE(ex1->trainStep(in, l1, err));
  REQUIRE(ex1->saveCheckpoint(dir.file("c.safetensors"), err));
  REQUIRE(ex2->init(99, err));
  REQUIRE(ex2->loadCheckpoint(dir.file("c.safetensors"), false, err));
  CHECK(ex2->step() == 3);
  REQUIRE(ex1->trainStep(in, l1, err));
  REQUIRE(ex2->trainStep(in, l2, err));
  CHECK(l1 == l2);
  CHECK(ex1->state().at("w").bytes == ex2->state().at("w").bytes);
  // The file uses the documented names, readable by any safetensors reader.
  TensorMap file;
  Metadata meta;
  REQUIRE(readSafetensors(dir.file("c.safetensors"), file, err, &meta));
  CHECK(file.size() == 5);
  CHECK(file.at("step").dtype == DType::I64);
  CHECK(file.at("step").shape.empty());
  CHECK(file.count("w.momentum"));
  CHECK(meta.at("model") == "tiny");
}

TEST_CASE("executor: checkpoint mismatches are reported", "[runtime][executor]") {
  TempDir dir;
  std::unique_ptr<Artifact> a;
  auto ex = loadTiny(a);
  std::string err, p = dir.file("c.safetensors");
  REQUIRE(ex->init(1, err));
  TensorMap m;
  m["w"] = ex->state().at("w");
  REQUIRE(writeSafetensors(p, m, err));
  CHECK_FALSE(ex->loadCheckpoint(p, false, err));
  CHECK(err == p + ": parameter 'b' is missing");
  m["b"] = Tensor::zeros(DType::F32, {11});
  REQUIRE(writeSafetensors(p, m, err));
  CHECK_FALSE(ex->loadCheckpoint(p, false, err));
  CHECK(err == p + ": 'b' is f32[11] but the model has f32[10]");
  m["b"] = Tensor::zeros(DType::F32, {10});
  m["extra"] = Tensor::zeros(DType::F32, {1});
  REQUIRE(writeSafetensors(p, m, err));
  CHECK_FALSE(ex->loadCheckpoint(p, false, err));
  CHECK(err == p + ": tensor 'extra' is not a parameter or state of the model");
  m.erase("extra");
  m["step"] = Tensor::zeros(DType::I32, {});
  m["step"].set(0, 12);
  REQUIRE(writeSafetensors(p, m, err));
  REQUIRE(ex->loadCheckpoint(p, false, err));
  CHECK(ex->step() == 12);
}

TEST_CASE("executor: wrong inputs are clear errors", "[runtime][executor]") {
  std::unique_ptr<Artifact> a;
  auto ex = loadTiny(a);
  std::string err;
  REQUIRE(ex->init(1, err));
  TensorMap in = batch(1);
  double loss;
  TensorMap missing = in;
  missing.erase("labels");
  CHECK_FALSE(ex->trainStep(missing, loss, err));
  CHECK(err == "train_step: missing input 'labels' (i64[32])");
  TensorMap wrong = in;
  wrong["x"] = Tensor::zeros(DType::F32, {16, 784});
  CHECK_FALSE(ex->trainStep(wrong, loss, err));
  CHECK(err == "train_step: input 'x' is f32[16,784] but the model expects f32[32,1,28,28]");
  wrong = in;
  wrong["labels"] = Tensor::zeros(DType::I32, {32});
  CHECK_FALSE(ex->trainStep(wrong, loss, err));
  CHECK(err == "train_step: input 'labels' is i32[32] but the model expects i64[32]");
  TensorMap extra = in;
  extra["w"] = Tensor::zeros(DType::F32, {784, 10});
  CHECK_FALSE(ex->trainStep(extra, loss, err));
  CHECK(err == "train_step: unknown input 'w'");
  TensorMap out;
  CHECK_FALSE(ex->call("predict", in, out, err));
  CHECK(err == "tiny.tgx: the model has no entry point 'predict'");
}

TEST_CASE("executor: in-place entries share the state buffer", "[runtime][executor]") {
  std::string m = tinyManifest();
  m.replace(m.find("\"train_step\": {"), 15, "\"train_step\": {\"inplace\": true,");
  std::unique_ptr<Artifact> a1, a2;
  auto plain = loadTiny(a1), inplace = loadTiny(a2, m);
  std::string err;
  REQUIRE(plain->init(4, err));
  REQUIRE(inplace->init(4, err));
  const void *before = inplace->stateData("w");
  TensorMap in = batch(9);
  double l1, l2;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(plain->trainStep(in, l1, err));
    REQUIRE(inplace->trainStep(in, l2, err));
    CHECK(l1 == l2);
  }
  CHECK(inplace->stateData("w") == before);
  CHECK(plain->state().at("w").bytes == inplace->state().at("w").bytes);
}

TEST_CASE("executor: load errors", "[runtime][executor]") {
  std::string err;
  auto load = [&](const std::string &manifest) {
    auto a = Artifact::fromBytes(tinyArtifact(manifest), "t.tgx", err);
    REQUIRE(a);
    CHECK_FALSE(Executor::load(*a, err));
    return err;
  };
  std::string m = tinyManifest();
  std::string renamed = m;
  renamed.replace(renamed.find("\"eval\""), 6, "\"evaluate\"");
  CHECK(load(renamed) == "t.tgx: cpu.so has no symbol 'tgx_evaluate' for the entry 'evaluate'");
  std::string badType = m;
  badType.replace(badType.find("\"i64\""), 5, "\"u8\"");
  CHECK(load(badType) == "t.tgx: manifest: entries.init.args[0].dtype: unknown dtype 'u8' "
                         "(expected f32, f64, bf16, f16, i32, i64 or i1)");
  CHECK(load("{\"format\":2,\"entries\":{}}") ==
        "t.tgx: manifest: format 2 is not supported (this runtime reads format 1)");
  CHECK(load("{\"format\":1,\"entries\":{\"a-b\":{}}}") ==
        "t.tgx: manifest: entries.a-b: entry names must be C identifiers");
  CHECK(load("{\"format\":1") ==
        "t.tgx: manifest: invalid JSON: byte 11: syntax error while parsing "
        "object - unexpected end of input; expected '}'");
  std::string mismatch = m, b = R"("name": "b", "role": "param", "dtype": "f32", "shape": [10])";
  mismatch.replace(mismatch.find(b, mismatch.find("train_step")) + b.size() - 3, 2, "11");
  CHECK(load(mismatch) == "t.tgx: manifest: train_step: param 'b' is f32[11] here but f32[10] elsewhere");
  for (const char *arena : {"-1", "\"big\"", "1.5", "2199023255552"}) {
    std::string bad = m;
    bad.replace(bad.find("\"train_step\": {"), 15,
                std::string("\"train_step\": {\"arena_bytes\": ") + arena + ",");
    CHECK(load(bad) == "t.tgx: manifest: entries.train_step.arena_bytes: "
                       "expected a byte count (0 to 1 TiB)");
  }
  std::string huge = m;
  huge.replace(huge.find("\"train_step\": {"), 15,
               "\"train_step\": {\"arena_bytes\": 1099511627776,");
  CHECK(load(huge) == "t.tgx: the manifest disagrees with the compiled code: "
                      "entry 'train_step' has an arena of 1099511627776 bytes "
                      "in the manifest, 0 in the code");
  // A manifest that agrees with itself but not with the code (valid
  // checksums): each is one line, found before any call.
  std::string noInit = m;
  size_t at = noInit.find("\"init\": {");
  noInit.erase(at, noInit.find("\"train_step\"") - at);
  CHECK(load(noInit) == "t.tgx: the manifest disagrees with the compiled code: "
                        "the code has entry point 'init', which the manifest "
                        "leaves out");
  std::string wider = m;
  for (size_t p = 0; (p = wider.find("[32, 1, 28, 28]", p)) != std::string::npos;)
    wider.replace(p, 15, "[64, 1, 28, 28]");
  CHECK(load(wider) == "t.tgx: the manifest disagrees with the compiled code: "
                       "entry 'train_step' argument #5 ('x') is x: "
                       "f32[64,1,28,28] (f32 of 200704 bytes) in the "
                       "manifest, f32 of 100352 bytes in the code");
  std::string i32 = m;
  for (size_t p = 0; (p = i32.find("\"labels\", \"role\": \"input\", \"dtype\": \"i64\"", p)) != std::string::npos;)
    i32.replace(p + 37, 3, "i32");
  CHECK(load(i32).find("argument #6 ('labels')") != std::string::npos);
  // A cpu.so that is not a shared object.
  ArtifactWriter w;
  REQUIRE(w.addSection("manifest", m, err));
  REQUIRE(w.addSection("cpu.so", "not an ELF file", err));
  auto a = Artifact::fromBytes(w.bytes(), "t.tgx", err);
  REQUIRE(a);
  CHECK_FALSE(Executor::load(*a, err));
  CHECK(err.rfind("t.tgx: cannot load cpu.so: ", 0) == 0);
}

TEST_CASE("executor: a truncated cpu.so with valid checksums is an error",
          "[runtime][executor]") {
  // The section CRC is recomputed, so only the ELF check stands between a
  // cut shared object and a SIGBUS in the loader (found by
  // test/attack/attack_compiler.py).
  std::string so = slurp(TINY_MODEL_SO), err;
  // Cuts inside the ELF header, the program headers, the last loaded
  // segment, and past every loaded segment (one byte short of the file:
  // only the section header table, written last, is cut; the code would
  // still load and run, but the file is not what the compiler wrote).
  REQUIRE(so.size() > sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, so.data(), sizeof eh);
  size_t loadedEnd = 0;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    REQUIRE(eh.e_phoff + (i + 1) * sizeof ph <= so.size());
    std::memcpy(&ph, so.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD)
      loadedEnd = std::max<size_t>(loadedEnd, ph.p_offset + ph.p_filesz);
  }
  REQUIRE(loadedEnd > 200);
  REQUIRE(loadedEnd < so.size());
  for (size_t keep : {size_t(20), size_t(64), size_t(200), loadedEnd - 1,
                      so.size() - 1}) {
    ArtifactWriter w;
    REQUIRE(w.addSection("manifest", tinyManifest(), err));
    REQUIRE(w.addSection("cpu.so", so.substr(0, keep), err));
    auto a = Artifact::fromBytes(w.bytes(), "t.tgx", err);
    REQUIRE(a);
    CHECK_FALSE(Executor::load(*a, err));
    INFO(err);
    CHECK(err.rfind("t.tgx: cannot load cpu.so: ", 0) == 0);
  }
}

TEST_CASE("executor: the state lives in one aligned block", "[runtime][executor]") {
  std::unique_ptr<Artifact> a;
  auto ex = loadTiny(a);
  std::string err;
  REQUIRE(ex->init(2, err));
  TensorMap in = batch(3);
  double loss;
  std::vector<const void *> seen;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(ex->trainStep(in, loss, err));
    seen.push_back(ex->stateData("w"));
    CHECK(reinterpret_cast<uintptr_t>(seen.back()) % 64 == 0);
  }
  // One persistent block: the state stays where it is; results of an entry
  // that is not in-place are copied back into it.
  CHECK(seen[0] == seen[1]);
  CHECK(seen[0] == seen[3]);
  Executor::MemoryUse use = ex->memoryUse();
  CHECK(use.persistentBytes % 256 == 0);
  CHECK(use.persistentBytes >= 256);
}

TEST_CASE("executor: integer inputs are range-checked", "[runtime][executor]") {
  std::string m = tinyManifest();
  std::unique_ptr<Artifact> a;
  auto ex = loadTiny(a);
  std::string err;
  REQUIRE(ex->init(1, err));
  // Recorded by the compiler: "index_bound": 10, no ignore_index.
  IndexRange r = ex->indexRange("labels");
  CHECK(r.bound == 10);
  CHECK_FALSE(r.hasIgnore);
  CHECK(ex->indexRange("x").bound == 0);
  TensorMap in = batch(1);
  double loss = 0;
  for (int64_t bad : {10, -1, -100}) {
    in["labels"].as<int64_t>()[3] = bad;
    CHECK_FALSE(ex->trainStep(in, loss, err));
    CHECK(err == "train_step: input 'labels': value " + std::to_string(bad) +
                     " at index 3 is outside [0, 10), the range of the model's input 'labels'");
    TensorMap out;
    CHECK_FALSE(ex->eval(in, out, err));
  }
  CHECK(ex->step() == 0); // nothing ran
  // Without the field, labels beside eval's logits [32, 10] have 10 classes
  // and cross_entropy's default ignore_index.
  std::string derived = m;
  for (size_t at; (at = derived.find(", \"index_bound\": 10")) != std::string::npos;)
    derived.erase(at, 19);
  std::unique_ptr<Artifact> a2;
  auto ex2 = loadTiny(a2, derived);
  r = ex2->indexRange("labels");
  CHECK(r.bound == 10);
  CHECK(r.hasIgnore);
  CHECK(r.ignore == -100);
  // The tightest bound of all entries; ignore_index where any records it.
  std::string two = m;
  two.replace(two.find("\"index_bound\": 10"), 17, "\"index_bound\": 7, \"ignore_index\": -1");
  std::unique_ptr<Artifact> a3;
  r = loadTiny(a3, two)->indexRange("labels");
  CHECK(r.bound == 7);
  CHECK(r.ignore == -1);
  // A corrupt field is a load error.
  for (const char *bad : {"\"index_bound\": \"ten\"", "\"index_bound\": 0",
                          "\"ignore_index\": -100"}) {
    std::string c = m;
    c.replace(c.find("\"index_bound\": 10"), 17, bad);
    auto art = Artifact::fromBytes(tinyArtifact(c), "t.tgx", err);
    REQUIRE(art);
    CHECK_FALSE(Executor::load(*art, err));
    CHECK(err.rfind("t.tgx: manifest: entries.", 0) == 0);
  }
}

TEST_CASE("executor: data-parallel manifests and communicators",
          "[runtime][executor]") {
  // A communicator that only reports its size (the tiny model's code has
  // no collectives, so allReduceSum is never reached).
  struct FakeComm final : Communicator {
    int n;
    explicit FakeComm(int n) : n(n) {}
    int rank() const override { return 0; }
    int size() const override { return n; }
    void allReduceSum(float *, int64_t) override {}
  };
  std::string err;
  auto manifestWithRanks = [](const std::string &ranks) {
    std::string m = tinyManifest();
    m.replace(m.find("\"entries\""), 9, "\"ranks\": " + ranks + ", \"entries\"");
    return m;
  };
  for (const char *bad : {"0", "-2", "\"two\"", "1.5", "1048577"}) {
    auto a = Artifact::fromBytes(tinyArtifact(manifestWithRanks(bad)), "t.tgx", err);
    REQUIRE(a);
    CHECK_FALSE(Executor::load(*a, err));
    CHECK(err == "t.tgx: manifest: ranks: expected an integer from 1 to 1048576");
  }

  // One process: no communicator, or one of size 1.
  std::unique_ptr<Artifact> a1;
  auto single = loadTiny(a1);
  FakeComm one(1), two(2), three(3);
  CHECK(single->setCommunicator(nullptr, err));
  CHECK(single->setCommunicator(&one, err));
  CHECK_FALSE(single->setCommunicator(&two, err));
  CHECK(err == "tiny.tgx: the model was compiled for 1 process but the job "
               "has 2; compile it with tgc --ranks 2");

  // A 2-rank artifact refuses other job sizes and a step without one.
  auto a2 = Artifact::fromBytes(tinyArtifact(manifestWithRanks("2")), "t.tgx", err);
  REQUIRE(a2);
  auto dp = Executor::load(*a2, err);
  REQUIRE(dp);
  CHECK(dp->manifest().ranks == 2);
  CHECK(dp->manifest().describe()["ranks"] == 2);
  REQUIRE(dp->init(1, err));
  double loss;
  CHECK_FALSE(dp->trainStep(batch(1), loss, err));
  CHECK(err == "t.tgx: train_step averages gradients over 2 ranks (tgc "
               "--ranks); run it with mpirun -n 2 tg-run");
  CHECK_FALSE(dp->setCommunicator(nullptr, err));
  CHECK(err == "t.tgx: the model was compiled for 2 ranks (tgc --ranks) but "
               "the job has 1 (start it with mpirun -n 2)");
  CHECK_FALSE(dp->setCommunicator(&three, err));
  CHECK(err == "t.tgx: the model was compiled for 2 ranks (tgc --ranks) but "
               "the job has 3; compile it with tgc --ranks 3");
  // The tiny model's code predates collectives: no way to install one.
  CHECK_FALSE(dp->setCommunicator(&two, err));
  CHECK(err == "t.tgx: cpu.so has no symbol 'tgx_set_all_reduce' for the "
               "collectives of its 2 ranks");
}

TEST_CASE("communicator: ZeRO's reduce-scatter and all-gather over a sum",
          "[runtime][comm]") {
  // Rank 1 of 2, whose peer (rank 0) holds `peer`: the sum adds it.
  struct PeerComm final : Communicator {
    std::vector<float> peer;
    int rank() const override { return 1; }
    int size() const override { return 2; }
    void allReduceSum(float *data, int64_t n) override {
      REQUIRE(int64_t(peer.size()) == n);
      for (int64_t i = 0; i < n; ++i)
        data[i] += peer[i];
    }
  } comm;
  // Rows of 2 floats per rank: rank 1 keeps the sum of row 1.
  std::vector<float> rows{1, 2, 3, 4};
  comm.peer = {10, 20, 30, 40};
  comm.reduceScatterSum(rows.data(), 2);
  CHECK(rows[0] == 33);
  CHECK(rows[1] == 44);
  // Rank 1 owns row 1; the peer's row 0 arrives, whatever was there.
  std::vector<float> gathered{-7, -7, 5, 6};
  comm.peer = {1, 2, 0, 0};
  comm.allGather(gathered.data(), 2);
  CHECK(gathered == std::vector<float>{1, 2, 5, 6});
}

TEST_CASE("executor: ZeRO manifests", "[runtime][executor]") {
  std::string err;
  auto withZero = [](const std::string &zero) {
    std::string m = tinyManifest();
    m.replace(m.find("\"entries\""), 9, "\"zero\": " + zero + ", \"entries\"");
    return m;
  };
  for (const char *bad : {"2", "-1", "\"one\""}) {
    auto a = Artifact::fromBytes(tinyArtifact(withZero(bad)), "t.tgx", err);
    REQUIRE(a);
    CHECK_FALSE(Executor::load(*a, err));
    CHECK(err == "t.tgx: manifest: zero: expected 0 or 1 (the ZeRO stage)");
  }
  // full_shape belongs to a 1-D shard.
  std::string m = tinyManifest();
  size_t shape = m.find("\"shape\"");
  REQUIRE(shape != std::string::npos);
  m.insert(shape, "\"full_shape\": [2, 2], ");
  auto a = Artifact::fromBytes(tinyArtifact(m), "t.tgx", err);
  REQUIRE(a);
  CHECK_FALSE(Executor::load(*a, err));
  CHECK(err.find("full_shape") != std::string::npos);
}
