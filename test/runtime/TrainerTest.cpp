//===- TrainerTest.cpp - libtgrt's training loop, without tg-run ----------===//
//
// The Trainer on the hand-written tiny model (TinyModel.c): epochs over a
// data source, accuracy, the metrics CSV, checkpoints, stop requests, and
// errors returned rather than exited on. tg-run's own output is checked in
// TgRunTest.cpp and the lit tests.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "runtime/Executor.h"
#include "runtime/Safetensors.h"
#include "runtime/Trainer.h"

#include <catch2/catch.hpp>
#include <csignal>

using namespace tgrt;
using namespace tgrt::test;

namespace {

using Tiny = LoadedTiny;

/// `n` rows a linear model separates: the label is the brightest of ten
/// pixel bands.
void rows(int64_t n, Tensor &x, Tensor &y) {
  x = Tensor::zeros(DType::F32, {n, 1, 28, 28});
  y = Tensor::zeros(DType::I64, {n});
  for (int64_t r = 0; r < n; ++r) {
    int64_t label = (r * 7) % 10;
    y.as<int64_t>()[r] = label;
    for (int64_t p = 0; p < 784; ++p)
      x.as<float>()[r * 784 + p] = p / 78 == label ? 1.0f : 0.05f;
  }
}

/// Train and test splits of `rows` in memory, batched by name.
DataSource memorySource(int64_t trainRows, int64_t testRows) {
  auto data = std::make_shared<TensorMap>();
  rows(trainRows, (*data)["x"], (*data)["labels"]);
  rows(testRows, (*data)["test.x"], (*data)["test.labels"]);
  auto batches = [data](std::string prefix) {
    return [data, prefix](const std::vector<TensorSpec> &inputs, int64_t first,
                          TensorMap &out, std::string &err) {
      out.clear();
      for (const TensorSpec &s : inputs)
        if (!sliceRows(data->at(prefix + s.name), first, s.shape[0], s.dtype,
                       s.shape, out[s.name], err))
          return false;
      return true;
    };
  };
  DataSource src;
  src.trainRows = trainRows;
  src.testRows = testRows;
  src.train = batches("");
  src.test = batches("test.");
  src.testLabels = data->at("test.labels");
  return src;
}

TrainOptions quiet() {
  TrainOptions o;
  o.out = nullptr;
  o.label = "tiny.tgx";
  return o;
}

} // namespace

TEST_CASE("trainer: epochs, accuracy and the metrics CSV", "[runtime][trainer]") {
  Tiny t;
  TempDir dir;
  TrainOptions o = quiet();
  o.epochs = 3;
  o.seed = 5;
  o.metrics = dir.file("m.csv");
  Trainer trainer(*t.ex, o);
  std::string err;
  REQUIRE(trainer.start(err));
  DataSource src = memorySource(128, 64);
  int calls = 0;
  trainer.onEpoch = [&](const EpochStats &s) { CHECK(s.epoch == ++calls); };
  TrainResult r = trainer.train(src);
  INFO(r.message);
  REQUIRE(r.status == TrainResult::Finished);
  CHECK(calls == 3);
  REQUIRE(r.epochs.size() == 3);
  CHECK(r.epochs[0].steps == 4); // 128 rows, batch 32
  CHECK(r.epochs[2].meanLoss < r.epochs[0].meanLoss);
  CHECK(r.epochs[2].accuracy > 90.0);
  CHECK(t.ex->step() == 12);
  std::string csv = slurp(o.metrics);
  CHECK(csv.rfind("kind,epoch,step,loss,samples_per_s,test_accuracy\n", 0) == 0);
  size_t stepsRows = 0, epochRows = 0;
  for (size_t at = 0; (at = csv.find("\nstep,", at)) != std::string::npos; ++at)
    ++stepsRows;
  for (size_t at = 0; (at = csv.find("\nepoch,", at)) != std::string::npos; ++at)
    ++epochRows;
  CHECK(stepsRows == 12);
  CHECK(epochRows == 3);
}

TEST_CASE("trainer: progress goes to the given stream", "[runtime][trainer]") {
  Tiny t;
  TempDir dir;
  TrainOptions o = quiet();
  o.batchLimit = 2;
  FILE *out = std::fopen(dir.file("out.txt").c_str(), "w+");
  REQUIRE(out);
  o.out = out;
  Trainer trainer(*t.ex, o);
  std::string err;
  REQUIRE(trainer.start(err));
  DataSource src = memorySource(128, 64);
  REQUIRE(trainer.train(src).status == TrainResult::Finished);
  std::fclose(out);
  std::string text = slurp(dir.file("out.txt"));
  // The thread count of the CPU code's parallel loops ends the line.
  CHECK(text.rfind("tiny: 2 steps per epoch, batch 32, 5 tensors of state, "
                   "starting at step 0, ", 0) == 0);
  CHECK(text.find(" thread") < text.find("\nmemory: planned peak "));
  CHECK(text.find("epoch 1 step 2/2 loss ") != std::string::npos);
  CHECK(text.find("test accuracy ") != std::string::npos);
  CHECK(text.find("(64 samples)\n") != std::string::npos);
}

TEST_CASE("trainer: a stop request ends at a step boundary with a checkpoint",
          "[runtime][trainer]") {
  TempDir dir;
  volatile std::sig_atomic_t stop = 0;
  TrainOptions o = quiet();
  o.epochs = 5;
  o.save = dir.file("ck.safetensors");
  o.stop = &stop;
  std::string err;
  {
    Tiny t;
    Trainer trainer(*t.ex, o);
    REQUIRE(trainer.start(err));
    DataSource src = memorySource(64, 32);
    trainer.onEpoch = [&](const EpochStats &) { stop = SIGINT; };
    TrainResult r = trainer.train(src);
    REQUIRE(r.status == TrainResult::Stopped);
    CHECK(r.message == "interrupted at epoch 2 after step 0/2 (step counter 2); "
                       "checkpoint saved to '" + o.save + "'");
    CHECK(r.epochs.size() == 1);
  }
  // Before any step nothing is saved, and the checkpoint above resumes.
  Tiny t;
  o.resume = o.save;
  Trainer trainer(*t.ex, o);
  REQUIRE(trainer.start(err));
  CHECK(t.ex->step() == 2);
  DataSource src = memorySource(64, 32);
  TrainResult r = trainer.train(src);
  REQUIRE(r.status == TrainResult::Stopped);
  CHECK(r.message == "interrupted before the first step (step counter 2); "
                     "nothing saved");
  stop = 0;
  REQUIRE(trainer.train(src).status == TrainResult::Finished);
  CHECK(t.ex->step() == 12);
}

TEST_CASE("trainer: errors are returned, not exited on", "[runtime][trainer]") {
  Tiny t;
  TempDir dir;
  std::string err;
  TrainOptions o = quiet();
  SECTION("too few rows") {
    DataSource src = memorySource(16, 0);
    TrainResult r = Trainer(*t.ex, o).train(src);
    CHECK(r.status == TrainResult::Failed);
    CHECK(r.message == "the data has fewer rows than one batch of 32");
  }
  SECTION("an unwritable metrics file") {
    o.metrics = dir.file("no/such/dir/m.csv");
    DataSource src = memorySource(64, 0);
    TrainResult r = Trainer(*t.ex, o).train(src);
    CHECK(r.status == TrainResult::Failed);
    CHECK(r.message == "cannot write '" + o.metrics + "': No such file or directory");
  }
  SECTION("a batch the data cannot give") {
    DataSource src = memorySource(64, 0);
    src.train = [](const std::vector<TensorSpec> &, int64_t, TensorMap &,
                   std::string &e) {
      e = "no rows here";
      return false;
    };
    TrainResult r = Trainer(*t.ex, o).train(src);
    CHECK(r.status == TrainResult::Failed);
    CHECK(r.message == "no rows here");
  }
  SECTION("a missing resume checkpoint") {
    o.resume = dir.file("missing.safetensors");
    Trainer trainer(*t.ex, o);
    CHECK_FALSE(trainer.start(err));
    CHECK(err.find("missing.safetensors") != std::string::npos);
  }
}

TEST_CASE("trainer: repeated steps on one batch", "[runtime][trainer]") {
  Tiny t;
  TempDir dir;
  std::string err;
  TrainOptions o = quiet();
  FILE *out = std::fopen(dir.file("out.txt").c_str(), "w+");
  REQUIRE(out);
  o.out = out;
  volatile std::sig_atomic_t stop = 0;
  o.stop = &stop;
  Trainer trainer(*t.ex, o);
  REQUIRE(trainer.start(err));
  Tensor x, y;
  rows(32, x, y);
  TensorMap batch{{"x", x}, {"labels", y}};
  REQUIRE(trainer.repeat(batch, 3, true).status == TrainResult::Finished);
  stop = SIGTERM;
  TrainResult r = trainer.repeat(batch, 3, true);
  std::fclose(out);
  CHECK(r.status == TrainResult::Stopped);
  CHECK(r.message == "interrupted after step 0 of 3; nothing saved");
  CHECK(t.ex->step() == 3);
  std::string text = slurp(dir.file("out.txt"));
  CHECK(text.rfind("step 0 loss ", 0) == 0);
  CHECK(text.find("step 2 loss ") != std::string::npos);
  CHECK(text.find("step 3") == std::string::npos);
  CHECK(memoryLine(*t.ex).rfind("memory: planned peak ", 0) == 0);
}

TEST_CASE("trainer: data sources from a spec", "[runtime][trainer]") {
  Tiny t;
  TempDir dir;
  std::string err;
  DataSource src;
  CHECK_FALSE(openDataSource("bogus", "", *t.ex, src, err));
  CHECK(err.rfind("unknown --data 'bogus'", 0) == 0);

  TensorMap file;
  rows(64, file["x"], file["labels"]);
  REQUIRE(writeSafetensors(dir.file("d.safetensors"), file, err));
  REQUIRE(openDataSource("safetensors:" + dir.file("d.safetensors"), "", *t.ex,
                         src, err));
  CHECK(src.trainRows == 64);
  CHECK_FALSE(src.test);
  TensorMap in;
  REQUIRE(src.train(t.ex->inputsOf("train_step"), 32, in, err));
  CHECK(in.at("labels").as<int64_t>()[0] == file.at("labels").as<int64_t>()[32]);

  file["labels"].as<int64_t>()[3] = 10; // the tiny model has 10 classes
  REQUIRE(writeSafetensors(dir.file("bad.safetensors"), file, err));
  CHECK_FALSE(openDataSource(dir.file("bad.safetensors"), "", *t.ex, src, err));
  CHECK(err.find("value 10 at index 3 is outside [0, 10)") != std::string::npos);

  CHECK(dataSourceFiles("u16:tok.bin", "") == std::vector<std::string>{"tok.bin"});
  CHECK(dataSourceFiles("fashion-mnist", "/d").size() == 4);
  CHECK(dataSourceFiles("fashion-mnist", "/d")[0] == "/d/train-images-idx3-ubyte.gz");
}
