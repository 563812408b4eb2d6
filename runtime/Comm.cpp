//===- Comm.cpp - default ZeRO collectives over all_reduce ------*- C++ -*-===//
//
// A communicator that only sums (allReduceSum) still runs a ZeRO stage 1
// artifact: reduce-scatter is a sum of every row that keeps its own, and
// all-gather a sum in which the other ranks' rows start at zero. Both move
// `size()` times the bytes of the real collectives, which tg-run's MPI
// communicator implements directly (tools/tg-run/Mpi.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/Comm.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tgrt {

void Communicator::reduceScatterSum(float *data, int64_t block) {
  allReduceSum(data, block * size());
  if (rank() != 0)
    std::memmove(data, data + int64_t(rank()) * block, block * sizeof(float));
}

void Communicator::allGather(float *data, int64_t block) {
  int64_t own = int64_t(rank()) * block, total = block * size();
  std::fill(data, data + own, 0.0f);
  std::fill(data + own + block, data + total, 0.0f);
  allReduceSum(data, total);
}

void Communicator::broadcast(void *data, int64_t bytes, int root) {
  auto *b = static_cast<unsigned char *>(data);
  std::vector<float> v(size_t(bytes), 0.0f);
  if (rank() == root)
    std::copy(b, b + bytes, v.begin());
  allReduceSum(v.data(), bytes);
  std::copy(v.begin(), v.end(), b);
}

std::string Communicator::waitProblem(double waitedSeconds, const char *what) {
  (void)waitedSeconds, (void)what;
  return "";
}

} // namespace tgrt
