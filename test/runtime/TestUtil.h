//===- TestUtil.h - helpers shared by the runtime tests ---------*- C++ -*-===//
//
// Temporary folders, whole-file I/O, running tg-run, and the tiny model
// (TinyModel.c compiled to a shared object + TinyModel.json) packaged as a
// .tgx, so every runtime path is tested without the compiler.
//
//===----------------------------------------------------------------------===//
#ifndef TG_TEST_RUNTIME_TESTUTIL_H
#define TG_TEST_RUNTIME_TESTUTIL_H

#include "runtime/Artifact.h"
#include "runtime/Executor.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace tgrt::test {

/// A fresh folder under $TMPDIR, removed at exit of scope.
struct TempDir {
  std::string path;
  TempDir() {
    const char *t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/tgrt-test-XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string &name) const { return path + "/" + name; }
};

inline std::string slurp(const std::string &path) {
  std::string out, err;
  if (!readFile(path, out, err))
    throw std::runtime_error(err);
  return out;
}

inline void spit(const std::string &path, const std::string &data) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    throw std::runtime_error("cannot write " + path);
  std::fwrite(data.data(), 1, data.size(), f);
  std::fclose(f);
}

/// The tiny model's manifest text.
inline std::string tinyManifest() { return slurp(TINY_MODEL_JSON); }

/// The tiny model as .tgx bytes, with an optionally replaced manifest and
/// code.
inline std::string tinyArtifact(const std::string &manifest = tinyManifest(),
                                const char *code = TINY_MODEL_SO) {
  ArtifactWriter w;
  std::string err;
  if (!w.addSection("manifest", manifest, err) ||
      !w.addSection("cpu.so", slurp(code), err))
    throw std::runtime_error(err);
  return w.bytes();
}

/// The tiny model's artifact loaded into an executor (throws, which Catch
/// reports, if it does not load).
struct LoadedTiny {
  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<Executor> ex;
  LoadedTiny() {
    std::string err;
    artifact = Artifact::fromBytes(tinyArtifact(), "tiny.tgx", err);
    if (artifact)
      ex = Executor::load(*artifact, err);
    if (!ex)
      throw std::runtime_error("the tiny model does not load: " + err);
  }
};

/// Result of running a command: exit status and combined output.
struct Run {
  int status;
  std::string out;
};

/// Runs the shell command `cmd` with its output captured.
inline Run runCommand(const std::string &cmd) {
  FILE *p = popen(cmd.c_str(), "r");
  Run r{-1, ""};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// Runs `TG_RUN args` with stdout and stderr captured.
inline Run tgRun(const std::string &args) {
  return runCommand(std::string(TG_RUN) + " " + args + " 2>&1");
}

/// Starts `TG_RUN args` with output to `log`, sends `sig` once `log`
/// contains `when` (or after 20 s), and returns the exit status (128 + a
/// signal that killed it) and the output.
inline Run tgRunSignalled(const std::string &args, const std::string &log,
                          const std::string &when, int sig) {
  ::unlink(log.c_str());
  pid_t pid = fork();
  if (pid == 0) {
    std::string cmd = "exec " + std::string(TG_RUN) + " " + args + " >'" + log + "' 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), (char *)nullptr);
    _exit(127);
  }
  for (int i = 0; i < 2000; ++i) {
    std::string out, err;
    if (readFile(log, out, err) && out.find(when) != std::string::npos)
      break;
    usleep(10000);
  }
  kill(pid, sig);
  int st = 0;
  waitpid(pid, &st, 0);
  std::string out, err;
  readFile(log, out, err);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

} // namespace tgrt::test

#endif // TG_TEST_RUNTIME_TESTUTIL_H
