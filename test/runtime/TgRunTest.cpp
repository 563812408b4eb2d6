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
