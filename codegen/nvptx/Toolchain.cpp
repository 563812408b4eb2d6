//===- Toolchain.cpp - ptxas and fatbinary, driven from C++ -----*- C++ -*-===//
//
// Runs the CUDA tools in a private temporary directory; everything they say
// is kept so a failure is reported with ptxas's own message.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/Toolchain.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TG_CUDA_HOME
#define TG_CUDA_HOME "/usr/local/cuda"
#endif

namespace tg::nvptx {
namespace {

/// A mkdtemp directory removed on destruction.
struct TempDir {
  std::string path;
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tg-nvptx-XXXXXX";
    if (mkdtemp(tmpl.data()))
      path = tmpl;
  }
  ~TempDir() {
    if (!path.empty())
      std::system(("rm -rf '" + path + "'").c_str());
  }
};

bool writeFile(const std::string &path, const std::string &data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(f);
}

bool readFile(const std::string &path, std::string &data) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  data = ss.str();
  return true;
}

/// Runs `cmd` through the shell; returns its exit status, output in `out`.
int run(const std::string &cmd, std::string &out) {
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p)
    return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string archNumber(const std::string &arch) {
  return arch.rfind("sm_", 0) == 0 ? arch.substr(3) : arch;
}

} // namespace

std::string cudaHome() {
  for (const char *v : {"TG_CUDA_HOME", "CUDA_HOME"})
    if (const char *s = std::getenv(v); s && *s)
      return s;
  return TG_CUDA_HOME;
}

bool haveCudaTool(const std::string &tool) {
  return access((cudaHome() + "/bin/" + tool).c_str(), X_OK) == 0;
}

void parsePtxasLog(const std::string &log, PtxasReport &r) {
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex spill(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex perf(R"(.*(C75\d\d|wgmma[^\n]*serializ)[^\n]*)");
  r.registers = -1;
  r.spillStores = r.spillLoads = r.stackFrame = 0;
  r.perfWarnings.clear();
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, regs))
      r.registers = std::max(r.registers, std::stoi(m[1]));
    if (std::regex_search(line, m, spill)) {
      r.stackFrame += std::stoi(m[1]);
      r.spillStores += std::stoi(m[2]);
      r.spillLoads += std::stoi(m[3]);
    }
    if (std::regex_match(line, m, perf))
      r.perfWarnings.push_back(line);
  }
}

PtxasReport assemblePtx(const std::string &ptx, const std::string &arch) {
  PtxasReport r;
  TempDir dir;
  if (dir.path.empty()) {
    r.log = "cannot create a temporary directory";
    return r;
  }
  std::string in = dir.path + "/k.ptx", out = dir.path + "/k.cubin";
  if (!writeFile(in, ptx)) {
    r.log = "cannot write " + in;
    return r;
  }
  std::string cmd = "'" + cudaHome() + "/bin/ptxas' -arch=" + arch +
                    " -v -O3 '" + in + "' -o '" + out + "'";
  int st = run(cmd, r.log);
  parsePtxasLog(r.log, r);
  r.ok = st == 0 && readFile(out, r.cubin);
  return r;
}

bool buildFatbin(const std::vector<FatbinImage> &images, std::string &fatbin,
                 std::string &error) {
  TempDir dir;
  if (dir.path.empty()) {
    error = "cannot create a temporary directory";
    return false;
  }
  std::string cmd = "'" + cudaHome() + "/bin/fatbinary' -64 --create='" +
                    dir.path + "/out.fatbin'";
  for (size_t i = 0; i < images.size(); ++i) {
    const FatbinImage &img = images[i];
    std::string f = dir.path + "/img" + std::to_string(i) +
                    (img.isPtx ? ".ptx" : ".cubin");
    if (!writeFile(f, img.data)) {
      error = "cannot write " + f;
      return false;
    }
    cmd += " --image3=kind=" + std::string(img.isPtx ? "ptx" : "elf") +
           ",sm=" + archNumber(img.arch) + ",file='" + f + "'";
  }
  std::string log;
  if (run(cmd, log) != 0 || !readFile(dir.path + "/out.fatbin", fatbin)) {
    error = "fatbinary failed: " + log;
    return false;
  }
  return true;
}

bool buildFatbinFromPtx(
    const std::vector<std::pair<std::string, std::string>> &archPtx,
    std::string &fatbin, std::string &error) {
  std::vector<FatbinImage> images;
  for (const auto &[arch, ptx] : archPtx) {
    PtxasReport r = assemblePtx(ptx, arch);
    if (!r.ok) {
      error = "ptxas -arch=" + arch + " failed: " + r.log;
      return false;
    }
    images.push_back({arch, r.cubin, false});
  }
  // Forward compatibility: the PTX of the first plain (non-'a') target can
  // be JIT-compiled by drivers for GPUs newer than any cubin here.
  for (const auto &[arch, ptx] : archPtx)
    if (arch.back() != 'a') {
      images.push_back({arch, ptx, true});
      break;
    }
  return buildFatbin(images, fatbin, error);
}

} // namespace tg::nvptx
