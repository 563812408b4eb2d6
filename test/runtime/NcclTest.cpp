//===- NcclTest.cpp - joining a data-parallel job's NCCL -----------------===//
//
// The host side of the GPU collectives (runtime/cuda/Nccl.h): a missing
// library is one line, a rank's device follows its local rank, and the
// communicator's default broadcast (the NCCL unique id's way to the other
// ranks) is exact. The collectives themselves run in
// lit-tests/runtime/data-parallel-cuda.test, on the fake libnccl.
//
//===----------------------------------------------------------------------===//
#include "runtime/Comm.h"
#include "runtime/cuda/Nccl.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
/// Rank `me` of two; the other rank contributes `other` to every sum.
struct TwoRanks final : tgrt::Communicator {
  int me = 0;
  std::vector<float> other;
  int rank() const override { return me; }
  int size() const override { return 2; }
  void allReduceSum(float *data, int64_t n) override {
    for (int64_t i = 0; i < n && size_t(i) < other.size(); ++i)
      data[i] += other[size_t(i)];
  }
};
} // namespace

TEST_CASE("a missing NCCL library is one error line", "[runtime][nccl]") {
  // The library is loaded once per process: this test is the only one here
  // that loads it.
  setenv("TG_NCCL_LIBRARY", "libnccl-not-here.so.2", 1);
  TwoRanks world;
  std::string err;
  CHECK(tg::rt::nccl::NcclComm::join(world, err) == nullptr);
  CHECK(err.rfind("no NCCL (libnccl-not-here.so.2 not found): ", 0) == 0);
  CHECK(err.find('\n') == std::string::npos);
  unsetenv("TG_NCCL_LIBRARY");
  CHECK(tg::rt::nccl::ncclLibrary() == "libnccl.so.2");
}

TEST_CASE("a rank's device follows its local rank", "[runtime][nccl]") {
  for (const char *v : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                        "MPI_LOCALRANKID", "PMI_LOCAL_RANK"})
    unsetenv(v);
  CHECK(tg::rt::nccl::localRank() == 0);
  setenv("SLURM_LOCALID", "3", 1);
  CHECK(tg::rt::nccl::localRank() == 3);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1); // Open MPI's comes first
  CHECK(tg::rt::nccl::localRank() == 1);
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  unsetenv("SLURM_LOCALID");
}

TEST_CASE("the default broadcast delivers the root's bytes exactly",
          "[runtime][nccl]") {
  // 128 bytes of every value 0..255, as a unique id may hold.
  unsigned char root[128], mine[128];
  for (int i = 0; i < 128; ++i)
    root[i] = static_cast<unsigned char>(255 - 2 * i);
  std::memset(mine, 0x5a, sizeof mine);
  TwoRanks receiver;
  receiver.me = 1;
  receiver.other.assign(root, root + sizeof root);
  receiver.broadcast(mine, sizeof mine, 0);
  CHECK(std::memcmp(mine, root, sizeof root) == 0);
  // The root keeps its bytes (the other rank adds zeros).
  TwoRanks sender;
  unsigned char copy[128];
  std::memcpy(copy, root, sizeof root);
  sender.other.assign(sizeof root, 0.0f);
  sender.broadcast(copy, sizeof copy, 0);
  CHECK(std::memcmp(copy, root, sizeof root) == 0);
}
