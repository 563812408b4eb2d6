//===- Executor.h - runs the CPU entry points of an artifact ----*- C++ -*-===//
//
// Loads the "cpu.so" section of a `.tgx` with dlopen (from a memfd, so no
// file is left behind), resolves `tgx_<entry>` for every manifest entry and
// calls them with the wrapper ABI:
//
//   extern "C" void tgx_<entry>(void **buffers);
//
// buffers[i] points to a dense row-major buffer: first every argument, then
// the arena of an entry with "arena_bytes" (one block that holds every
// planned intermediate value), then every result, in manifest order. The executor owns the persistent state
// (roles "param", "state", "step") by name across calls: arguments with those
// roles are fed from it, and results with those roles and a matching name
// replace it. Results are written to fresh buffers which are then swapped
// into place (no copy); only an entry marked "inplace" gets the same buffer
// for an argument and its next value. docs/runtime.md has the details.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_EXECUTOR_H
#define TG_RUNTIME_EXECUTOR_H

#include "runtime/Artifact.h"
#include "runtime/Comm.h"
#include "runtime/Data.h"
#include "runtime/Device.h"
#include "runtime/Manifest.h"
#include "runtime/Tensor.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>

namespace tgrt {

/// The CPU executor of one artifact.
class Executor {
public:
  /// Parses the manifest and prepares `device`: for the CPU, loads cpu.so
  /// and resolves every entry's symbol; for a GPU backend (Device.h), checks
  /// the artifact's launch schedule and loads its code.
  static std::unique_ptr<Executor> load(const Artifact &artifact,
                                        std::string &err,
                                        DeviceKind device = DeviceKind::Cpu);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const Manifest &manifest() const { return manifest_; }
  /// What runs the entry points ("cpu", "emulator (PTX sm_80)").
  std::string deviceDescription() const {
    return device_ ? device_->describe()
           : fallback_.empty() ? "cpu"
                               : "cpu (no CUDA: " + fallback_ + ")";
  }
  /// Threads the CPU code's parallel loops run on: 1 where the code has
  /// none (or a GPU device runs the entries), else what setThreads set.
  int threads() const { return threads_; }
  /// Sets the threads of the CPU code's parallel loops (OpenMP, through
  /// the artifact's tgx_set_threads): n >= 1, or 0 for the cores this
  /// process may use (its CPU affinity). load() sets 1. Call it
  /// from the thread that calls the entries. Returns threads().
  int setThreads(int n);
  /// The cores this process may run on (sched_getaffinity), at least 1.
  static int availableCores();
  /// The device keeps the persistent block in its memory (Device.h).
  bool resident() const { return device_ && device_->resident(); }
  /// Brings the host copy of the persistent block up to date with a
  /// resident device (state() does it too, but cannot say why it failed).
  bool syncState(std::string &err) const;
  bool hasEntry(std::string_view name) const {
    return manifest_.entry(name) != nullptr;
  }

  /// Calls entry `name`: persistent-role arguments come from the state,
  /// the others from `inputs` (by name; shapes and dtypes must match
  /// exactly). Persistent-role results update the state; all others are
  /// returned in `outputs` by name.
  bool call(std::string_view name, const TensorMap &inputs, TensorMap &outputs,
            std::string &err);
  /// Installs the communicator of a data-parallel job (docs/data-parallel.md)
  /// in the artifact's code. The job must have the ranks the artifact was
  /// compiled for (manifest "ranks"); nullptr means one process. Until a
  /// fitting communicator is set, train_step of an artifact compiled for
  /// several ranks refuses to run.
  bool setCommunicator(Communicator *comm, std::string &err);

  /// `init(seed)`: fills parameters, optimizer state and step.
  bool init(int64_t seed, std::string &err);
  /// One `train_step` on `inputs`; the "loss" result as a double. Waits
  /// for every step started before it.
  bool trainStep(const TensorMap &inputs, double &loss, std::string &err);
  /// Starts one `train_step` without waiting for its loss: on an
  /// asynchronous device (CUDA) the step may still run when this returns,
  /// so the host prepares the next batch meanwhile; elsewhere it runs now.
  /// Its loss comes from takeLoss, in the order the steps started.
  bool startStep(const TensorMap &inputs, std::string &err);
  /// The loss of the oldest started step whose loss was not taken yet,
  /// waiting for that step (not for the newer ones).
  bool takeLoss(double &loss, std::string &err);
  /// Steps started whose loss was not taken yet.
  size_t stepsInFlight() const { return inFlight_.size(); }
  /// Whether the model keeps a step counter (step() is 0 otherwise).
  bool hasStepCounter() const;
  /// `eval(inputs)` with the current parameters.
  bool eval(const TensorMap &inputs, TensorMap &outputs, std::string &err);

  /// Parameters, optimizer state and step by name: a copy of the
  /// persistent block, made by this call (valid until the next one).
  const TensorMap &state() const;
  /// Where a persistent tensor lives in the persistent block (stable for
  /// the executor's lifetime), or nullptr.
  const void *stateData(const std::string &name) const;
  /// Replaces one persistent tensor; dtype and shape must match.
  bool setState(const std::string &name, const Tensor &value,
                std::string &err);
  /// The role of a persistent tensor ("param", "state", "step").
  std::string roleOf(const std::string &name) const;
  /// The step counter (0 if the model has none).
  int64_t step() const;

  /// Memory the model's code uses, measured: the arena (one allocation,
  /// sized by the largest planned entry), the persistent tensors, and what
  /// the compiled code allocated on its own (through the artifact's counted
  /// allocator; 0 when everything lives in the arena).
  struct MemoryUse {
    int64_t arenaBytes = 0;      ///< bytes of the one arena allocation
    int64_t persistentBytes = 0; ///< params, optimizer state, step
    int64_t heapPeakBytes = 0;   ///< most bytes the code held at once
    int64_t heapAllocations = 0; ///< allocations since the last reset
    bool heapCounted = false;    ///< the code reports its allocations
    int64_t deviceBytes = -1;    ///< a GPU's measured allocation (-1: none)
    DeviceMemory devicePlan;     ///< what the GPU's allocation should be
  };
  MemoryUse memoryUse() const;
  /// Starts a new measurement of the code's own allocations.
  void resetHeapPeak();

  /// The values the integer input `name` may hold (bound 0: unchecked).
  /// From the manifest's "index_bound" and "ignore_index" of the argument
  /// where the compiler recorded them; otherwise an integer input with the
  /// shape of eval's logits without their last dimension is a class label
  /// with that many classes (and cross_entropy's default ignore_index -100).
  IndexRange indexRange(const std::string &name) const;
  /// eval's output used for accuracy: "logits", else its only float output
  /// of rank 2; nullptr if neither.
  const TensorSpec *logits() const;

  /// The non-persistent arguments of `entry` (its inputs), in order.
  std::vector<TensorSpec> inputsOf(std::string_view entry) const;

  /// Writes params, optimizer state (`<param>.<slot>`) and `step` to a
  /// safetensors file, atomically. Sharded state (ZeRO) is gathered whole
  /// first, so every rank of such a job calls this, and rank 0 writes.
  bool saveCheckpoint(const std::string &path, std::string &err) const;
  /// Loads tensors from a safetensors file into the state. Every parameter
  /// must be present; state and step are loaded when present unless
  /// `paramsOnly`. A tensor the model does not have is an error. Sharded
  /// state is read whole and this rank keeps its shard.
  bool loadCheckpoint(const std::string &path, bool paramsOnly,
                      std::string &err);

private:
  Executor() = default;
  using EntryFn = void (*)(void **);
  /// call(); `deferred`: the device may return before the entry ran, and
  /// its non-persistent results go to inFlight_ rather than `outputs`.
  bool callEntry(std::string_view name, const TensorMap &inputs,
                 TensorMap &outputs, bool deferred, std::string &err);
  Manifest manifest_;
  void *handle_ = nullptr;
  int fd_ = -1;
  std::vector<std::pair<std::string, EntryFn>> fns_;
  /// A tensor's place in the persistent block.
  struct Slot {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    size_t offset = 0, bytes = 0;
    /// ZeRO stage 1: this rank's flat shard of a tensor of this shape.
    std::optional<std::vector<int64_t>> fullShape;
  };
  /// The whole tensor of sharded slot `s`, gathered from every rank (a
  /// collective: every rank calls it, in the same order).
  Tensor gatherShard(const Slot &s) const;
  /// This rank's shard of `whole` for sharded slot `s`.
  Tensor shardOf(const Slot &s, const Tensor &whole) const;
  /// Fills ranges_ from the manifest (explicit, else derived).
  bool readIndexRanges(std::string &err);
  uint8_t *data(const Slot &s) { return persistent_.data() + s.offset; }
  const uint8_t *data(const Slot &s) const {
    return persistent_.data() + s.offset;
  }
  /// Persistent tensors (params, state, step) and train_step's inputs live
  /// in one allocation, laid out like the plan's persistent region: in
  /// train_step's argument order, each 256-byte aligned.
  std::map<std::string, Slot> slots_, inputSlots_;
  Bytes persistent_;
  mutable TensorMap snapshot_;
  Bytes arena_; ///< one allocation shared by every planned entry
  void (*heapStats_)(int64_t *) = nullptr;
  void (*heapReset_)() = nullptr;
  /// tgx_set_threads of the artifact's support code; null where the code
  /// has no parallel loops (no tgx_parallel_loops) or is older.
  int (*setThreads_)(int) = nullptr;
  int threads_ = 1;
  /// tgx_set_all_reduce of the artifact's support code (absent in
  /// artifacts built before collectives existed).
  void (*setAllReduce_)(void (*)(void *, float *, int64_t), void *) = nullptr;
  /// tgx_set_sharded (ZeRO stage 1's collectives and the rank).
  void (*setSharded_)(void (*)(void *, float *, int64_t),
                      void (*)(void *, float *, int64_t), void *,
                      int64_t) = nullptr;
  Communicator *comm_ = nullptr;
  /// A GPU backend running the entries instead of cpu.so (null: the CPU).
  std::unique_ptr<Device> device_;
  /// Why DeviceKind::Auto runs on the CPU (empty: it was not asked).
  std::string fallback_;
  /// A resident device holds newer state than persistent_ (the mirror).
  mutable bool hostStale_ = false;
  std::map<std::string, std::vector<Tensor>> scratch_; ///< results, by entry
  /// The non-persistent results of started train steps (oldest first;
  /// the device lands them), and landed ones to reuse.
  std::deque<std::vector<Tensor>> inFlight_;
  std::vector<std::vector<Tensor>> spareResults_;
  std::map<std::string, std::string> roles_;
  std::map<std::string, IndexRange> ranges_; ///< integer inputs, by name
  std::string label_;
};

} // namespace tgrt

#endif // TG_RUNTIME_EXECUTOR_H
