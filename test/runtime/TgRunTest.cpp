//===- TgRunTest.cpp - tg-run end to end, its errors and its links --------===//
//
// Runs the tg-run binary on the tiny model: --describe, the cross-check
// mode, training on Fashion-MNIST (a few batches), and every kind of bad
// input, which must be exactly one line "tg-run: error: ..." and exit 1.
// Also checks that libtgrt and tg-run link neither LLVM nor MLIR and that no
// runtime source includes their headers.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "runtime/Data.h"
#include "runtime/Json.h"
#include "runtime/Safetensors.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <sys/stat.h>

using namespace tgrt;
using namespace tgrt::test;

namespace {
/// A folder with tiny.tgx, a parameter file and a batch file.
struct Fixture {
  TempDir dir;
  std::string model = dir.file("tiny.tgx");
  Fixture() {
    std::string err;
    spit(model, tinyArtifact());
    TensorMap p;
    p["w"] = Tensor::zeros(DType::F32, {784, 10});
    p["b"] = Tensor::zeros(DType::F32, {10});
    for (int i = 0; i < 7840; ++i)
      p["w"].as<float>()[i] = 0.001f * (i % 13) - 0.006f;
    REQUIRE(writeSafetensors(dir.file("p.safetensors"), p, err));
    TensorMap b;
    b["x"] = Tensor::zeros(DType::F32, {32, 1, 28, 28});
    for (uint64_t i = 0; i < b["x"].numel(); ++i)
      b["x"].as<float>()[i] = (i % 17) / 17.0f;
    b["labels"] = Tensor::zeros(DType::I32, {32}); // converted to i64
    for (int i = 0; i < 32; ++i)
      b["labels"].as<int32_t>()[i] = i % 10;
    REQUIRE(writeSafetensors(dir.file("b.safetensors"), b, err));
  }
};

/// Expects exactly one line "tg-run: error: <msg>\n" and exit status 1.
void expectError(const std::string &args, const std::string &msg) {
  INFO("tg-run " << args);
  Run r = tgRun(args);
  CHECK(r.status == 1);
  CHECK(r.out == "tg-run: error: " + msg + "\n");
}
} // namespace

TEST_CASE("tg-run --describe prints the interface", "[runtime][tg-run]") {
  Fixture f;
  Run r = tgRun(f.model + " --describe");
  REQUIRE(r.status == 0);
  Json j;
  std::string err;
  REQUIRE(parseJson(r.out, j, err));
  CHECK(j["model"] == "tiny");
  CHECK(j["entries"].contains("train_step"));
  REQUIRE(j["parameters"].size() == 2);
  CHECK(j["parameters"][0]["name"] == "w");
  CHECK(j["state"].size() == 3);
  CHECK(j["inputs"].size() == 2);
  CHECK(j["outputs"][1]["name"] == "logits");
  CHECK(j["memory"]["peak_bytes"] == 65536);
}

TEST_CASE("tg-run cross-check mode", "[runtime][tg-run]") {
  Fixture f;
  std::string args = f.model + " --load " + f.dir.file("p.safetensors") +
                     " --batch " + f.dir.file("b.safetensors") + " --steps 3" +
                     " --save-params " + f.dir.file("out.safetensors") +
                     " --save-grads " + f.dir.file("g.safetensors") + " --print-loss";
  Run r = tgRun(args);
  INFO(r.out);
  REQUIRE(r.status == 0);
  std::vector<double> losses;
  const char *p = r.out.c_str();
  for (int i = 0; i < 3; ++i) {
    int step;
    double loss;
    int used = 0;
    REQUIRE(std::sscanf(p, "step %d loss %lf\n%n", &step, &loss, &used) == 2);
    CHECK(step == i);
    losses.push_back(loss);
    p += used;
  }
  CHECK(*p == '\0');
  CHECK(losses[2] < losses[0]);
  TensorMap out, grads;
  std::string err;
  REQUIRE(readSafetensors(f.dir.file("out.safetensors"), out, err));
  CHECK(out.size() == 2);
  REQUIRE(readSafetensors(f.dir.file("g.safetensors"), grads, err));
  REQUIRE(grads.size() == 2);
  CHECK(grads.at("w").shape == std::vector<int64_t>{784, 10});
  // The same run again is bit-identical.
  CHECK(tgRun(args).out == r.out);
}

TEST_CASE("tg-run trains on Fashion-MNIST", "[runtime][tg-run]") {
  if (access((std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz").c_str(), R_OK)) {
    WARN("Fashion-MNIST is not installed; skipped");
    return;
  }
  Fixture f;
  std::string csv = f.dir.file("m.csv"), ckpt = f.dir.file("c.safetensors");
  Run r = tgRun(f.model + " --data fashion-mnist --epochs 2 --batch-limit 150 --metrics " +
                csv + " --save " + ckpt + " --seed 3");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("epoch 1 step 100/150 loss ") != std::string::npos);
  CHECK(r.out.find("epoch 2: mean loss ") != std::string::npos);
  size_t at = r.out.rfind("test accuracy ");
  REQUIRE(at != std::string::npos);
  double acc = std::atof(r.out.c_str() + at + 14);
  CHECK(acc > 65.0); // softmax regression after 300 small steps
  std::string metrics = slurp(csv);
  CHECK(metrics.rfind("kind,epoch,step,loss,samples_per_s,test_accuracy\n", 0) == 0);
  CHECK(metrics.find("\nepoch,2,300,") != std::string::npos);
  // Resume continues the step counter.
  r = tgRun(f.model + " --data fashion-mnist --epochs 1 --batch-limit 1 --resume " + ckpt);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("starting at step 300") != std::string::npos);
}

TEST_CASE("tg-run errors are one line", "[runtime][tg-run]") {
  Fixture f;
  std::string d = f.dir.path;
  expectError("", "no model given; usage: tg-run MODEL.tgx --describe | --data ... | --load ... --batch ...");
  expectError(f.model, "nothing to do: give --describe, --data, or --load and --batch");
  expectError(f.model + " --describe --data fashion-mnist",
              "choose one of --describe, --data, or --load/--batch");
  expectError(f.model + " --frobnicate", "unknown option '--frobnicate' (see tg-run --help)");
  expectError(f.model + " --epochs", "--epochs needs a value");
  expectError(f.model + " --data fashion-mnist --epochs x",
              "--epochs expects an integer >= 1, got 'x'");
  expectError(f.model + " --load " + d + "/p.safetensors",
              "--load needs --batch B.safetensors (the batch to train on)");
  expectError(d + "/none.tgx --describe",
              "cannot open '" + d + "/none.tgx': No such file or directory");
  spit(d + "/bad.tgx", "hello, world");
  expectError(d + "/bad.tgx --describe",
              d + "/bad.tgx: not a .tgx artifact (the file does not start with 'TGX1')");
  std::string tgx = slurp(f.model);
  spit(d + "/cut.tgx", tgx.substr(0, 4000));
  Run r = tgRun(d + "/cut.tgx --describe");
  CHECK(r.status == 1);
  CHECK(r.out.rfind("tg-run: error: " + d + "/cut.tgx: truncated: section 'cpu.so' ends at byte ", 0) == 0);
  CHECK(r.out.find("but the file has 4000 bytes\n") != std::string::npos);
  expectError(f.model + " --data mnist",
              "unknown --data 'mnist' (expected fashion-mnist, safetensors:PATH, u8:PATH, u16:PATH or u32:PATH)");
  expectError(f.model + " --data fashion-mnist --data-dir " + d,
              "cannot open '" + d + "/train-images-idx3-ubyte.gz': No such file or directory"
              " (install Debian's dataset-fashion-mnist, or --data-dir)");
  expectError(f.model + " --load " + d + "/b.safetensors --batch " + d + "/b.safetensors",
              d + "/b.safetensors: tensor 'labels' is not a parameter or state of the model");
  expectError(f.model + " --load " + d + "/p.safetensors --batch " + d + "/p.safetensors",
              d + "/p.safetensors: no tensor for the input 'x' (f32[32,1,28,28])");
  expectError(f.model + " --load " + d + "/missing.safetensors --batch " + d + "/b.safetensors",
              "cannot open '" + d + "/missing.safetensors': No such file or directory");
  spit(d + "/junk.safetensors", std::string("\x10\0\0\0\0\0\0\0{\"a\":", 13));
  expectError(f.model + " --load " + d + "/junk.safetensors --batch " + d + "/b.safetensors",
              d + "/junk.safetensors: truncated: the header needs 16 bytes but only 5 follow");
  // A model without forward_grad cannot save gradients.
  std::string m = tinyManifest();
  size_t at = m.find(",\n    \"forward_grad\"");
  size_t end = m.find("\n  },\n  \"memory\"");
  m.erase(at, end - at);
  spit(d + "/nograd.tgx", tinyArtifact(m, TINY_MODEL_NOGRAD_SO));
  expectError(d + "/nograd.tgx --load " + d + "/p.safetensors --batch " + d +
                  "/b.safetensors --save-grads " + d + "/g.safetensors",
              d + "/nograd.tgx: --save-grads needs a 'forward_grad' entry point, which this "
                  "artifact does not have");
  // Safetensors data: tensors named after the inputs, with equal rows.
  expectError(f.model + " --data safetensors:" + d + "/p.safetensors",
              d + "/p.safetensors: tensor 'w' has 784 rows but the others have 10");
  r = tgRun(f.model + " --data " + d + "/b.safetensors");
  CHECK(r.status == 0);
  CHECK(r.out.find("epoch 1: mean loss ") != std::string::npos);
}

TEST_CASE("libtgrt and tg-run link neither LLVM nor MLIR", "[runtime][links]") {
  for (const char *bin : {TGRT_LIB, TG_RUN}) {
    INFO(bin);
    Run r{0, ""};
    std::string cmd = std::string("readelf -d '") + bin + "' 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
      r.out.append(buf, n);
    REQUIRE(pclose(p) == 0);
    CHECK(r.out.find("(NEEDED)") != std::string::npos);
    CHECK(r.out.find("LLVM") == std::string::npos);
    CHECK(r.out.find("MLIR") == std::string::npos);
    CHECK(r.out.find("libclang") == std::string::npos);
    // The resolved closure too (ldd follows indirect dependencies).
    std::string ldd = std::string("ldd '") + bin + "' | grep -Ei 'llvm|mlir'";
    CHECK(std::system(ldd.c_str()) != 0);
  }
  std::string grep = std::string("grep -rlE '#include [<\"](llvm|mlir)/' '") +
                     TGC_RUNTIME_SOURCE_DIR + "/runtime' '" + TGC_RUNTIME_SOURCE_DIR +
                     "/tools/tg-run'";
  CHECK(std::system(grep.c_str()) != 0);
}

namespace {
/// A safetensors training set for the tiny model: `rows` images and labels.
std::string trainingSet(const TempDir &dir, int64_t rows, int64_t badLabelAt = -1,
                        int64_t badLabel = 0) {
  TensorMap d;
  d["x"] = Tensor::zeros(DType::F32, {rows, 1, 28, 28});
  for (uint64_t i = 0; i < d["x"].numel(); ++i)
    d["x"].as<float>()[i] = (i % 23) / 23.0f;
  d["labels"] = Tensor::zeros(DType::I32, {rows});
  for (int64_t i = 0; i < rows; ++i)
    d["labels"].as<int32_t>()[i] = i == badLabelAt ? badLabel : i % 10;
  std::string path = dir.file("train.safetensors"), err;
  REQUIRE(writeSafetensors(path, d, err));
  return path;
}
} // namespace

TEST_CASE("tg-run refuses indices outside the model's range where they enter",
          "[runtime][tg-run]") {
  Fixture f;
  std::string d = f.dir.path;
  // Training data: a label of 10 for a model with 10 classes.
  std::string data = trainingSet(f.dir, 64, 37, 10);
  expectError(f.model + " --data " + data,
              data + ": tensor 'labels': value 10 at index 37 is outside [0, 10), the range "
                     "of the model's input 'labels'");
  // The cross-check batch.
  TensorMap b;
  std::string err;
  REQUIRE(readSafetensors(d + "/b.safetensors", b, err));
  b["labels"].as<int32_t>()[5] = -3;
  REQUIRE(writeSafetensors(d + "/bad.safetensors", b, err));
  expectError(f.model + " --batch " + d + "/bad.safetensors",
              d + "/bad.safetensors: tensor 'labels': value -3 at index 5 is outside [0, 10), "
                  "the range of the model's input 'labels'");
  // Fashion-MNIST's labels 0-9 against a model with 5 classes.
  if (access((std::string(kFashionMnistDir) + "/train-labels-idx1-ubyte.gz").c_str(), R_OK) == 0) {
    std::string m = tinyManifest();
    for (size_t at; (at = m.find("\"index_bound\": 10")) != std::string::npos;)
      m.replace(at, 17, "\"index_bound\": 5");
    spit(d + "/five.tgx", tinyArtifact(m));
    Run r = tgRun(d + "/five.tgx --data fashion-mnist");
    CHECK(r.status == 1);
    CHECK(r.out.rfind("tg-run: error: " + std::string(kFashionMnistDir) +
                          "/train-labels-idx1-ubyte.gz: value ", 0) == 0);
    CHECK(r.out.find(" is outside [0, 5), the range of the model's input 'labels'\n") !=
          std::string::npos);
  }
}

TEST_CASE("tg-run checks its outputs before any work", "[runtime][tg-run]") {
  Fixture f;
  std::string d = f.dir.path, data = trainingSet(f.dir, 64);
  std::string train = f.model + " --data " + data;
  expectError(train + " --save /dev/null", "cannot write '/dev/null': not a regular file");
  struct stat st;
  REQUIRE(stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  expectError(train + " --metrics /dev/full", "cannot write '/dev/full': not a regular file");
  expectError(train + " --save " + d + "/none/c.safetensors",
              "cannot write '" + d + "/none/c.safetensors': No such file or directory");
  expectError(train + " --save " + f.model,
              "--save '" + f.model + "' is an input of this run; refusing to overwrite it");
  expectError(train + " --metrics " + data,
              "--metrics '" + data + "' is an input of this run; refusing to overwrite it");
  expectError(train + " --save " + d + "/c --metrics " + d + "/c",
              "--metrics and --save name the same file '" + d + "/c'");
  expectError(f.model + " --batch " + d + "/b.safetensors --save-params " + d + "/b.safetensors",
              "--save-params '" + d + "/b.safetensors' is an input of this run; refusing to "
              "overwrite it");
  CHECK(slurp(f.model) == tinyArtifact());
  // --save onto the --resume checkpoint continues in place.
  Run r = tgRun(train + " --save " + d + "/c.safetensors");
  REQUIRE(r.status == 0);
  r = tgRun(train + " --save " + d + "/c.safetensors --resume " + d + "/c.safetensors");
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("starting at step 2") != std::string::npos);
}

TEST_CASE("tg-run reports every write error", "[runtime][tg-run]") {
  Fixture f;
  std::string d = f.dir.path, data = trainingSet(f.dir, 64);
  // A file size limit stands in for a full disk (the model's 15 KB of code
  // still fits in its memfd): the CSV and the checkpoint fail, and say so.
  std::string limited = "sh -c 'ulimit -f 40; exec " + std::string(TG_RUN) + " ";
  auto run = [&](const std::string &args) {
    return runCommand(limited + args + "' 2>&1");
  };
  Run r = run(f.model + " --data " + data + " --epochs 1000 --metrics " + d + "/m.csv");
  CHECK(r.status == 1);
  CHECK(r.out.find("tg-run: error: cannot write '" + d + "/m.csv': File too large\n") !=
        std::string::npos);
  r = run(f.model + " --data " + data + " --save " + d + "/c.safetensors");
  CHECK(r.status == 1);
  CHECK(r.out.find("tg-run: error: cannot write '" + d + "/c.safetensors': File too large\n") !=
        std::string::npos);
  // No temporary is left behind.
  CHECK(std::system(("test -z \"$(ls '" + d + "' | grep tmp)\"").c_str()) == 0);
}

TEST_CASE("tg-run refuses devices and impossible sizes as inputs", "[runtime][tg-run]") {
  Fixture f;
  std::string d = f.dir.path;
  expectError(f.model + " --data u16:/dev/zero", "'/dev/zero' is not a regular file");
  expectError("/dev/zero --describe", "'/dev/zero' is not a regular file");
  std::string header("\0\0\x08\x01\xee\x6b\x28\x00", 8); // 4 billion labels
  spit(d + "/train-images-idx3-ubyte.gz", header);
  spit(d + "/train-labels-idx1-ubyte.gz", header);
  expectError(f.model + " --data fashion-mnist --data-dir " + d,
              d + "/train-images-idx3-ubyte.gz: truncated: the header claims 4000000000 data "
                  "bytes but the file has 8 bytes (install Debian's dataset-fashion-mnist, or "
                  "--data-dir)");
}

TEST_CASE("tg-run stops on Ctrl-C at a step boundary and saves", "[runtime][tg-run]") {
  Fixture f;
  std::string d = f.dir.path, data = trainingSet(f.dir, 320), ckpt = d + "/c.safetensors";
  for (int sig : {SIGINT, SIGTERM}) {
    Run r = tgRunSignalled(f.model + " --data " + data + " --epochs 100000 --save " + ckpt,
                           d + "/log", "epoch 3: mean loss", sig);
    INFO(r.out);
    CHECK(r.status == 128 + sig);
    size_t at = r.out.find("tg-run: interrupted at epoch ");
    REQUIRE(at != std::string::npos);
    long long stepCounter = -1;
    REQUIRE(sscanf(r.out.c_str() + r.out.find("(step counter ", at), "(step counter %lld)",
                   &stepCounter) == 1);
    CHECK(r.out.find("; checkpoint saved to '" + ckpt + "'\n", at) != std::string::npos);
    TensorMap c;
    std::string err;
    REQUIRE(readSafetensors(ckpt, c, err));
    CHECK(c.at("step").as<int64_t>()[0] == stepCounter);
    CHECK(stepCounter >= 30);
    CHECK(std::system(("test -z \"$(ls '" + d + "' | grep tmp)\"").c_str()) == 0);
  }
  // Cross-check mode writes nothing when interrupted.
  Run r = tgRunSignalled(f.model + " --batch " + d + "/b.safetensors --steps 100000000 "
                         "--print-loss --save-params " + d + "/p2.safetensors",
                         d + "/log", "step 5 ", SIGINT);
  CHECK(r.status == 130);
  CHECK(r.out.find("; nothing saved\n") != std::string::npos);
  CHECK(access((d + "/p2.safetensors").c_str(), F_OK) != 0);
}

TEST_CASE("tg-run options through CLI11", "[runtime][tg-run]") {
  Fixture f;
  std::string d = f.dir.path;
  Run r = tgRun("--help");
  CHECK(r.status == 0);
  CHECK(r.out.rfind("usage: tg-run MODEL.tgx --describe\n", 0) == 0);
  expectError(f.model + " extra --describe", "unexpected argument 'extra'");
  expectError(f.model + " --batch", "--batch needs a value");
  expectError(f.model + " --data fashion-mnist --seed 1x", "--seed expects an integer >= "
              "-9223372036854775808, got '1x'");
  // The last of a repeated option wins; negative numbers are values.
  std::string args = f.model + " --batch " + d + "/b.safetensors --print-loss --seed -5";
  r = tgRun(args + " --steps 3 --steps 1");
  CHECK(r.status == 0);
  CHECK(r.out.rfind("step 0 loss ", 0) == 0);
  CHECK(r.out.find("step 1 ") == std::string::npos);
  CHECK(tgRun(args + " --steps=1").out == r.out);
}
