//===- ArtifactTest.cpp - the .tgx container and its corruption cases -----===//
#include "TestUtil.h"

#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace tgrt;
using namespace tgrt::test;

static std::string smallArtifact() {
  ArtifactWriter w;
  std::string err;
  REQUIRE(w.addSection("manifest", R"({"format":1,"entries":{}})", err));
  REQUIRE(w.addSection("cpu.so", std::string(100, 'x'), err));
  REQUIRE(w.addSection("gpu.fatbin", "", err));
  return w.bytes();
}

TEST_CASE("artifact: write and read back", "[runtime][artifact]") {
  TempDir dir;
  ArtifactWriter w;
  std::string err, big(100000, '\0');
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>(i * 7);
  REQUIRE(w.addSection("manifest", "{}", err));
  REQUIRE(w.addSection("cpu.so", big, err));
  REQUIRE(w.addSection("manifest", "{\"format\":1}", err)); // replaces
  REQUIRE(w.write(dir.file("m.tgx"), err));
  auto a = Artifact::open(dir.file("m.tgx"), err);
  REQUIRE(a);
  CHECK(a->version() == kArtifactVersion);
  REQUIRE(a->sections().size() == 2);
  CHECK(a->section("manifest") == "{\"format\":1}");
  CHECK(a->section("cpu.so") == big);
  CHECK(a->sections()[1].offset % 64 == 0);
  CHECK_FALSE(a->has("gpu.fatbin"));
  CHECK(a->section("gpu.fatbin").empty());
  // No temporary file is left behind.
  CHECK(std::system(("test $(ls '" + dir.path + "' | wc -l) = 1").c_str()) == 0);
}

TEST_CASE("artifact: section names are checked", "[runtime][artifact]") {
  ArtifactWriter w;
  std::string err;
  CHECK_FALSE(w.addSection("", "x", err));
  CHECK_FALSE(w.addSection(std::string(40, 'n'), "x", err));
  CHECK_FALSE(w.addSection(std::string("a\0b", 3), "x", err));
  CHECK(w.addSection(std::string(39, 'n'), "x", err));
}

TEST_CASE("artifact: every truncation is a one-line error", "[runtime][artifact]") {
  std::string full = smallArtifact();
  for (size_t n = 0; n < full.size(); ++n) {
    std::string err;
    INFO("truncated to " << n << " bytes");
    auto a = Artifact::fromBytes(full.substr(0, n), "m.tgx", err);
    CHECK_FALSE(a);
    CHECK(err.rfind("m.tgx: truncated: ", 0) == 0);
    CHECK(err.find('\n') == std::string::npos);
  }
  std::string err;
  CHECK(Artifact::fromBytes(full, "m.tgx", err));
}

TEST_CASE("artifact: the truncation message names the section", "[runtime][artifact]") {
  std::string full = smallArtifact(), err;
  auto a = Artifact::fromBytes(full, "model.tgx", err);
  REQUIRE(a);
  const auto &so = a->sections()[1];
  CHECK_FALSE(Artifact::fromBytes(full.substr(0, so.offset + 10), "model.tgx", err));
  CHECK(err == "model.tgx: truncated: section 'cpu.so' ends at byte " +
                   std::to_string(so.offset + so.size) + " but the file has " +
                   std::to_string(so.offset + 10) + " bytes");
}

TEST_CASE("artifact: every flipped byte is detected", "[runtime][artifact]") {
  std::string full = smallArtifact();
  for (size_t i = 0; i < full.size(); ++i)
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string bad = full, err;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      INFO("byte " << i << " ^ " << int(mask));
      CHECK_FALSE(Artifact::fromBytes(bad, "m.tgx", err));
      CHECK(err.rfind("m.tgx: ", 0) == 0);
      CHECK(err.find('\n') == std::string::npos);
    }
}

TEST_CASE("artifact: wrong magic, version and trailing bytes", "[runtime][artifact]") {
  std::string full = smallArtifact(), err;
  std::string bad = full;
  bad.replace(0, 4, "ELF\x7f");
  CHECK_FALSE(Artifact::fromBytes(bad, "m.tgx", err));
  CHECK(err == "m.tgx: not a .tgx artifact (the file does not start with 'TGX1')");
  bad = full;
  bad[3] = '2';
  CHECK_FALSE(Artifact::fromBytes(bad, "m.tgx", err));
  CHECK(err == "m.tgx: unknown container magic 'TGX2' (this runtime reads TGX1)");
  bad = full;
  bad[4] = 7;
  CHECK_FALSE(Artifact::fromBytes(bad, "m.tgx", err));
  CHECK(err == "m.tgx: format version 7 is not supported (this runtime reads version 1)");
  CHECK_FALSE(Artifact::fromBytes(full + "junk", "m.tgx", err));
  CHECK(err == "m.tgx: corrupt: the header records " + std::to_string(full.size()) +
                   " bytes but the file has " + std::to_string(full.size() + 4) + " bytes");
  bad = full;
  bad[full.size() - 1] ^= 1; // inside cpu.so: caught by the file CRC first
  CHECK_FALSE(Artifact::fromBytes(bad, "m.tgx", err));
  CHECK(err.rfind("m.tgx: corrupt: file checksum mismatch", 0) == 0);
  CHECK_FALSE(Artifact::open("/nonexistent/m.tgx", err));
  CHECK(err == "cannot open '/nonexistent/m.tgx': No such file or directory");
}

TEST_CASE("atomic writes: devices, stale temporaries, writability", "[runtime][artifact]") {
  TempDir dir;
  std::string err;
  // rename() would replace a device with a regular file.
  CHECK_FALSE(writeFileAtomic("/dev/null", "x", err));
  CHECK(err == "cannot write '/dev/null': not a regular file");
  struct stat st;
  REQUIRE(stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  REQUIRE(mkfifo(dir.file("fifo").c_str(), 0600) == 0);
  CHECK_FALSE(writeFileAtomic(dir.file("fifo"), "x", err));
  CHECK_FALSE(checkWritable(dir.file("fifo"), err));
  CHECK_FALSE(checkWritable(dir.file("no/such/c.safetensors"), err));
  CHECK(err == "cannot write '" + dir.file("no/such/c.safetensors") +
                   "': No such file or directory");
  CHECK(checkWritable(dir.file("c.safetensors"), err));
  // A temporary of a dead process (a save killed with -9) is swept by the
  // next save; a live process's, a foreign name and other files stay.
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  waitpid(dead, nullptr, 0);
  std::string stale = dir.file("c.safetensors.tmp." + std::to_string(dead) + ".AbC123");
  std::string live = dir.file("c.safetensors.tmp." + std::to_string(getppid()) + ".AbC123");
  std::string foreign = dir.file("c.safetensors.tmp.notmine");
  std::string other = dir.file("d.safetensors.tmp." + std::to_string(dead) + ".AbC123");
  for (const std::string &f : {stale, live, foreign, other})
    spit(f, "partial");
  REQUIRE(writeFileAtomic(dir.file("c.safetensors"), "data", err));
  CHECK(slurp(dir.file("c.safetensors")) == "data");
  CHECK(access(stale.c_str(), F_OK) != 0);
  for (const std::string &f : {live, foreign, other})
    CHECK(access(f.c_str(), F_OK) == 0);
  // Nothing of ours is left beside the file.
  CHECK(std::system(("test $(ls '" + dir.path + "' | grep -c '^c.safetensors.tmp.') = 2").c_str()) == 0);
}
