//===- GpuSchedule.cpp - the launch schedule of a GPU artifact ------------===//
//
// Strict validation, like Manifest.cpp: every number is range-checked before
// it becomes a size, an offset or a launch dimension, so a corrupt manifest
// is one line of error and never an out-of-bounds access in a backend.
//
//===----------------------------------------------------------------------===//
#include "runtime/GpuSchedule.h"

namespace tgrt {

const GpuEntry *GpuSchedule::entry(std::string_view name) const {
  for (const GpuEntry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

const char *collectiveName(GpuCollective::Op op) {
  using Op = GpuCollective::Op;
  switch (op) {
  case Op::AllReduce:
    return "all_reduce";
  case Op::ReduceScatter:
    return "reduce_scatter";
  case Op::AllGather:
    return "all_gather";
  case Op::Shard:
    return "shard";
  case Op::None:
    break;
  }
  return "none";
}

bool overlaps(const GpuBuffer &a, const GpuBuffer &b) {
  return a.kind == b.kind && a.index == b.index &&
         a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

bool GpuSchedule::hasCollectives() const {
  for (const GpuEntry &e : entries)
    for (const GpuStep &s : e.steps)
      if (s.isCollective())
        return true;
  return false;
}

int64_t GpuSchedule::maxArenaBytes() const {
  int64_t most = 0;
  for (const GpuEntry &e : entries)
    most = std::max(most, e.arenaBytes);
  return most;
}

std::vector<std::string> gpuTargets(const Manifest &m) {
  std::vector<std::string> out;
  const Json *gpu = jsonGet(m.raw, "gpu");
  const Json *targets = gpu ? jsonGet(*gpu, "targets") : nullptr;
  if (targets && targets->is_array())
    for (const Json &t : *targets)
      if (t.is_string())
        out.push_back(t.get<std::string>());
  return out;
}

std::set<std::string> ptxKernelNames(std::string_view ptx) {
  std::set<std::string> names;
  for (size_t at = ptx.find(".entry"); at != std::string_view::npos;
       at = ptx.find(".entry", at + 6)) {
    size_t start = at + 6;
    while (start < ptx.size() && (ptx[start] == ' ' || ptx[start] == '\t'))
      ++start;
    size_t end = start;
    while (end < ptx.size() && (std::isalnum((unsigned char)ptx[end]) ||
                                ptx[end] == '_' || ptx[end] == '$'))
      ++end;
    if (end > start)
      names.insert(std::string(ptx.substr(start, end - start)));
  }
  return names;
}

namespace {

/// Parses the schedule's JSON with one error prefix per field.
class Parser {
public:
  Parser(const Manifest &m, const std::set<std::string> &kernels,
         std::string &err)
      : m(m), kernels(kernels), err(err) {}

  bool fail(const std::string &where, const std::string &msg) {
    err = "manifest: " + where + ": " + msg;
    return false;
  }

  /// An integer member of `j` in [lo, hi].
  bool integer(const Json &j, const char *key, const std::string &where,
               int64_t lo, int64_t hi, int64_t &out) {
    const Json *v = jsonGet(j, key);
    std::optional<int64_t> n = v ? jsonInt(*v) : std::nullopt;
    if (!n || *n < lo || *n > hi)
      return fail(where + "." + key, "expected an integer from " +
                                         std::to_string(lo) + " to " +
                                         std::to_string(hi));
    out = *n;
    return true;
  }

  bool dims(const Json &j, const char *key, const std::string &where,
            std::array<uint32_t, 3> &out) {
    const Json *v = jsonGet(j, key);
    if (!v || !v->is_array() || v->size() != 3)
      return fail(where + "." + key, "expected 3 dimensions");
    for (size_t i = 0; i < 3; ++i) {
      std::optional<int64_t> n = jsonInt((*v)[i]);
      if (!n || *n < 1 || *n > 0x7fffffff)
        return fail(where + "." + key,
                    "dimensions must be integers from 1 to 2^31-1");
      out[i] = uint32_t(*n);
    }
    return true;
  }

  /// A buffer range, checked against the sizes of `entry`'s buffers; in
  /// iteration `iteration` of a repeat, its offset advanced by iteration
  /// times its "stride".
  bool buffer(const Json &j, const std::string &where, const EntrySpec &entry,
              int64_t arenaBytes, GpuBuffer &out, int64_t iteration = 0) {
    if (!j.is_object())
      return fail(where, "expected an object");
    const Json *kind = jsonGet(j, "buffer");
    std::string k = kind && kind->is_string() ? kind->get<std::string>() : "";
    const int64_t big = int64_t(1) << 40;
    if (!integer(j, "offset", where, 0, big, out.offset) ||
        !integer(j, "bytes", where, 0, big, out.bytes))
      return false;
    if (jsonGet(j, "stride")) {
      // |stride| and the iteration (< 2^20) keep the product in range.
      int64_t stride = 0;
      if (!integer(j, "stride", where, -big, big, stride))
        return false;
      out.offset += iteration * stride;
      if (out.offset < 0)
        return fail(where, "offset " + std::to_string(out.offset) +
                               " is negative in iteration " +
                               std::to_string(iteration) + " of the repeat");
    }
    int64_t size = 0;
    std::string what;
    if (k == "arena") {
      out.kind = GpuBuffer::Kind::Arena;
      size = arenaBytes;
      what = "the arena of " + std::to_string(arenaBytes) + " bytes";
    } else if (k == "arg") {
      out.kind = GpuBuffer::Kind::Arg;
      if (!integer(j, "index", where, 0, int64_t(entry.args.size()) - 1,
                   out.index))
        return false;
      const TensorSpec &s = entry.args[size_t(out.index)];
      size = int64_t(s.byteSize());
      what = "argument '" + s.name + "' (" + std::to_string(size) + " bytes)";
    } else if (k == "const") {
      out.kind = GpuBuffer::Kind::Const;
      if (!integer(j, "index", where, 0, int64_t(constants.size()) - 1,
                   out.index))
        return false;
      size = int64_t(constants[size_t(out.index)].size());
      what = "constant " + std::to_string(out.index) + " (" +
             std::to_string(size) + " bytes)";
    } else {
      return fail(where + ".buffer", "expected \"arg\", \"arena\" or \"const\"");
    }
    if (out.offset > size || out.bytes > size - out.offset)
      return fail(where, "bytes " + std::to_string(out.offset) + ".." +
                             std::to_string(out.offset + out.bytes) +
                             " lie outside " + what);
    return true;
  }

  /// Appends the steps of `j` (one launch or copy, or a repeat of them) to
  /// `out`, expanded: the runtime replays a flat list.
  bool steps(const Json &j, const std::string &where, const EntrySpec &entry,
             int64_t arena, std::vector<GpuStep> &out) {
    const Json *op = j.is_object() ? jsonGet(j, "op") : nullptr;
    if (!op || !op->is_string() || op->get<std::string>() != "repeat") {
      GpuStep st;
      if (!step(j, where, entry, arena, st))
        return false;
      if (!room(where, out.size(), 1))
        return false;
      out.push_back(std::move(st));
      return true;
    }
    int64_t count = 0;
    if (!integer(j, "count", where, 1, int64_t(1) << 20, count))
      return false;
    const Json *body = jsonGet(j, "steps");
    if (!body || !body->is_array() || body->empty())
      return fail(where + ".steps", "expected a non-empty array of steps");
    if (!room(where, out.size(), uint64_t(count) * body->size()))
      return false;
    for (int64_t k = 0; k < count; ++k)
      for (size_t i = 0; i < body->size(); ++i) {
        std::string w = where + ".steps[" + std::to_string(i) + "]";
        const Json &s = (*body)[i];
        const Json *inner = s.is_object() ? jsonGet(s, "op") : nullptr;
        if (inner && inner->is_string() && inner->get<std::string>() == "repeat")
          return fail(w, "a repeat inside a repeat");
        GpuStep st;
        if (!step(s, k ? w + " (iteration " + std::to_string(k) + ")" : w,
                  entry, arena, st, k))
          return false;
        out.push_back(std::move(st));
      }
    return true;
  }

  /// Whether `adding` more steps after `have` stay within the limit of an
  /// entry (2^24 steps: a corrupt count, not a model).
  bool room(const std::string &where, uint64_t have, uint64_t adding) {
    const uint64_t limit = uint64_t(1) << 24;
    if (adding > limit - std::min(have, limit))
      return fail(where, "the entry expands to more than 2^24 steps");
    return true;
  }

  bool step(const Json &j, const std::string &where, const EntrySpec &entry,
            int64_t arena, GpuStep &out, int64_t iteration = 0) {
    if (!j.is_object())
      return fail(where, "expected an object");
    const Json *op = jsonGet(j, "op");
    std::string o = op && op->is_string() ? op->get<std::string>() : "";
    if (o == "copy") {
      out.copy = true;
      const Json *src = jsonGet(j, "src"), *dst = jsonGet(j, "dst");
      if (!src || !dst)
        return fail(where, "a copy needs src and dst");
      if (!buffer(*src, where + ".src", entry, arena, out.src, iteration) ||
          !buffer(*dst, where + ".dst", entry, arena, out.dst, iteration))
        return false;
      if (out.src.bytes != out.dst.bytes)
        return fail(where, "a copy's src and dst differ in size");
      return true;
    }
    if (o == "all_reduce" || o == "reduce_scatter" || o == "all_gather" ||
        o == "shard")
      return collective(j, o, where, entry, arena, out.collective, iteration);
    if (o != "launch")
      return fail(where + ".op", "expected \"launch\", \"copy\", \"repeat\" or "
                                 "a collective (\"all_reduce\", \"reduce_scatter\", "
                                 "\"all_gather\", \"shard\")");
    const Json *kernel = jsonGet(j, "kernel");
    if (!kernel || !kernel->is_string())
      return fail(where + ".kernel", "expected a string");
    out.kernel = kernel->get<std::string>();
    if (!kernels.count(out.kernel))
      return fail(where + ".kernel",
                  "no kernel '" + out.kernel + "' in the artifact's code");
    int64_t shared = 0;
    if (!dims(j, "grid", where, out.grid) ||
        !dims(j, "block", where, out.block) ||
        !integer(j, "shared_bytes", where, 0, 232448, shared))
      return false;
    out.sharedBytes = uint32_t(shared);
    uint64_t threads = uint64_t(out.block[0]) * out.block[1] * out.block[2];
    if (threads > 1024)
      return fail(where + ".block", "more than 1024 threads per block");
    const Json *params = jsonGet(j, "params");
    if (!params || !params->is_array() || params->size() > 4096)
      return fail(where + ".params", "expected an array of buffers");
    for (size_t i = 0; i < params->size(); ++i) {
      GpuBuffer b;
      std::string pw = where + ".params[" + std::to_string(i) + "]";
      if (!buffer((*params)[i], pw, entry, arena, b, iteration))
        return false;
      out.params.push_back(b);
      out.maps.emplace_back();
      if (const Json *map = jsonGet((*params)[i], "tensor_map"))
        if (!tensorMap(*map, pw + ".tensor_map", b, out.maps.back().emplace()))
          return false;
    }
    return true;
  }

  /// A list of 1..5 integers (`count` of them when nonzero), each from lo
  /// to hi.
  template <typename T, size_t N>
  bool list(const Json &j, const char *key, const std::string &where,
            size_t count, int64_t lo, int64_t hi, std::array<T, N> &out) {
    const Json *v = jsonGet(j, key);
    if (!v || !v->is_array() || v->size() > N || (count && v->size() != count) ||
        (!count && v->empty()))
      return fail(where + "." + key,
                  count ? "expected " + std::to_string(count) + " integers"
                        : "expected 1 to " + std::to_string(N) + " integers");
    for (size_t i = 0; i < v->size(); ++i) {
      std::optional<int64_t> n = jsonInt((*v)[i]);
      if (!n || *n < lo || *n > hi)
        return fail(where + "." + key, "expected integers from " +
                                           std::to_string(lo) + " to " +
                                           std::to_string(hi));
      out[i] = T(*n);
    }
    return true;
  }

  /// A collective step: its reduction, dtype and tensors, each tensor's
  /// buffers the sizes its count and the job's ranks give, apart from
  /// each other (NCCL runs a bucket's calls as one group) or, for an
  /// all_reduce, in place.
  bool collective(const Json &j, const std::string &o, const std::string &where,
                  const EntrySpec &entry, int64_t arena, GpuCollective &out,
                  int64_t iteration) {
    using Op = GpuCollective::Op;
    out.op = o == "all_reduce"       ? Op::AllReduce
             : o == "reduce_scatter" ? Op::ReduceScatter
             : o == "all_gather"     ? Op::AllGather
                                     : Op::Shard;
    if (out.op == Op::AllReduce || out.op == Op::ReduceScatter) {
      const Json *r = jsonGet(j, "reduce");
      std::string red = r && r->is_string() ? r->get<std::string>() : "";
      if (red != "sum" && red != "mean")
        return fail(where + ".reduce", "expected \"sum\" or \"mean\"");
      out.mean = red == "mean";
    }
    // The communicator the step runs over: 0, the world (the job's NCCL
    // communicator), the only one a runtime has; absent before there were
    // others to name.
    if (jsonGet(j, "comm") && !integer(j, "comm", where, 0, 0, out.comm))
      return false;
    const Json *d = jsonGet(j, "dtype");
    std::string dt = d && d->is_string() ? d->get<std::string>() : "";
    if (dt == "f32")
      out.dtype = DType::F32;
    else if (dt == "bf16")
      out.dtype = DType::BF16;
    else if (dt == "f16")
      out.dtype = DType::F16;
    else
      return fail(where + ".dtype", "expected \"f32\", \"bf16\" or \"f16\"");
    const Json *tensors = jsonGet(j, "tensors");
    if (!tensors || !tensors->is_array() || tensors->empty() ||
        tensors->size() > 4096)
      return fail(where + ".tensors",
                  "expected an array of 1 to 4096 tensors (a bucket)");
    const int64_t ranks = m.ranks, size = int64_t(dtypeSize(out.dtype));
    for (size_t i = 0; i < tensors->size(); ++i) {
      std::string w = where + ".tensors[" + std::to_string(i) + "]";
      const Json &t = (*tensors)[i];
      if (!t.is_object())
        return fail(w, "expected an object");
      int64_t count = 0;
      GpuBuffer src, dst;
      const Json *sj = jsonGet(t, "src"), *dj = jsonGet(t, "dst");
      if (!integer(t, "count", w, 1, (int64_t(1) << 40) / (ranks * size), count))
        return false;
      if (!sj || !dj)
        return fail(w, "a collective's tensor needs src and dst");
      if (!buffer(*sj, w + ".src", entry, arena, src, iteration) ||
          !buffer(*dj, w + ".dst", entry, arena, dst, iteration))
        return false;
      int64_t one = count * size, all = ranks * one;
      int64_t wantSrc = out.op == Op::ReduceScatter || out.op == Op::Shard
                            ? all
                            : one;
      int64_t wantDst = out.op == Op::AllGather ? all : one;
      if (src.bytes != wantSrc || dst.bytes != wantDst)
        return fail(w, "src and dst hold " + std::to_string(src.bytes) +
                           " and " + std::to_string(dst.bytes) + " bytes, but " +
                           o + " of " + std::to_string(count) + " " + dt +
                           " over " + std::to_string(ranks) + " ranks needs " +
                           std::to_string(wantSrc) + " and " +
                           std::to_string(wantDst));
      if (overlaps(src, dst) &&
          !(out.op == Op::AllReduce && src.offset == dst.offset))
        return fail(w, "src and dst overlap");
      for (size_t k = 0; k < out.dsts.size(); ++k)
        if (overlaps(dst, out.srcs[k]) || overlaps(dst, out.dsts[k]) ||
            overlaps(src, out.dsts[k]))
          return fail(w, "overlaps tensor " + std::to_string(k) +
                             " of the same bucket");
      out.counts.push_back(count);
      out.srcs.push_back(src);
      out.dsts.push_back(dst);
    }
    return true;
  }

  /// One of `names` (index = cuda.h's value) as member `key` of `j`.
  template <size_t N>
  bool name(const Json &j, const char *key, const std::string &where,
            const char *const (&names)[N], int &out) {
    const Json *v = jsonGet(j, key);
    std::string s = v && v->is_string() ? v->get<std::string>() : "";
    for (size_t i = 0; i < N; ++i)
      if (s == names[i]) {
        out = int(i);
        return true;
      }
    std::string all;
    for (size_t i = 0; i < N; ++i)
      all += std::string(i ? ", " : "") + "\"" + names[i] + "\"";
    return fail(where + "." + key, "expected one of " + all);
  }

  /// A parameter's TMA descriptor: the arguments of cuTensorMapEncodeTiled
  /// (TensorMap.h), checked by the driver's rules and against the range of
  /// its buffer `b`, which the map must not reach past.
  bool tensorMap(const Json &j, const std::string &where, const GpuBuffer &b,
                 tg::rt::cuda::TensorMapArgs &out) {
    namespace cu = tg::rt::cuda;
    if (!j.is_object())
      return fail(where, "expected an object");
    const Json *dims = jsonGet(j, "dims");
    size_t rank = dims && dims->is_array() ? dims->size() : 0;
    const int64_t big = int64_t(1) << 40;
    if (!name(j, "dtype", where, cu::kTensorMapTypeNames, out.dataType) ||
        !list(j, "dims", where, 0, 1, int64_t(1) << 32, out.dims) ||
        (rank > 1 && !list(j, "strides", where, rank - 1, 1, big, out.strides)) ||
        !list(j, "box", where, rank, 1, 256, out.box) ||
        !list(j, "element_strides", where, rank, 1, 8, out.elementStrides) ||
        !name(j, "interleave", where, cu::kTensorMapInterleaveNames,
              out.interleave) ||
        !name(j, "swizzle", where, cu::kTensorMapSwizzleNames, out.swizzle) ||
        !name(j, "l2_promotion", where, cu::kTensorMapL2Names,
              out.l2Promotion) ||
        !name(j, "oob_fill", where, cu::kTensorMapFillNames, out.oobFill))
      return false;
    if (rank == 1 && jsonGet(j, "strides") &&
        !(jsonGet(j, "strides")->is_array() && jsonGet(j, "strides")->empty()))
      return fail(where + ".strides", "expected 0 integers");
    out.rank = unsigned(rank);
    if (std::string why = cu::checkTensorMap(out); !why.empty())
      return fail(where, why);
    if (b.offset % 16)
      return fail(where, "offset " + std::to_string(b.offset) +
                             " is not 16-byte aligned, as a tensor map's "
                             "address must be");
    if (cu::tensorMapSpan(out) > (unsigned __int128)b.bytes)
      return fail(where, "the map (" + cu::describeTensorMap(out) +
                             ") reaches past the " + std::to_string(b.bytes) +
                             " bytes of its buffer");
    return true;
  }

  bool parse(const std::string &target, GpuSchedule &out) {
    const Json *gpu = jsonGet(m.raw, "gpu");
    if (!gpu || !gpu->is_object())
      return fail("gpu", "expected an object (the artifact has no GPU code)");
    std::string at = "gpu.schedules." + target;
    const Json *schedules = jsonGet(*gpu, "schedules");
    const Json *s = schedules ? jsonGet(*schedules, target) : nullptr;
    if (!s || !s->is_object())
      return fail(at, "missing");
    out = GpuSchedule();
    out.target = target;
    const Json *consts = jsonGet(*s, "constants");
    if (!consts || !consts->is_array())
      return fail(at + ".constants", "expected an array");
    int64_t total = 0;
    for (size_t i = 0; i < consts->size(); ++i) {
      std::string w = at + ".constants[" + std::to_string(i) + "]";
      const Json &c = (*consts)[i];
      const Json *hex = c.is_object() ? jsonGet(c, "hex") : nullptr;
      int64_t repeat = 0;
      if (!hex || !hex->is_string() || hex->get_ref<const std::string &>().empty() ||
          hex->get_ref<const std::string &>().size() % 2)
        return fail(w + ".hex", "expected an even number of hex digits");
      if (!integer(c, "repeat", w, 1, int64_t(1) << 40, repeat))
        return false;
      const std::string &h = hex->get_ref<const std::string &>();
      std::string element;
      for (size_t k = 0; k < h.size(); k += 2) {
        auto nibble = [](char ch) -> int {
          if (ch >= '0' && ch <= '9')
            return ch - '0';
          if (ch >= 'a' && ch <= 'f')
            return ch - 'a' + 10;
          if (ch >= 'A' && ch <= 'F')
            return ch - 'A' + 10;
          return -1;
        };
        int hi = nibble(h[k]), lo = nibble(h[k + 1]);
        if (hi < 0 || lo < 0)
          return fail(w + ".hex", "expected hex digits");
        element.push_back(char(hi * 16 + lo));
      }
      // Constants are small (splats of scalars, short tables): 1 GiB in
      // all is a corrupt file, not a model.
      if (repeat > ((int64_t(1) << 30) - total) / int64_t(element.size()))
        return fail(w, "the constants exceed 1 GiB");
      total += repeat * int64_t(element.size());
      std::string bytes;
      bytes.reserve(size_t(repeat) * element.size());
      for (int64_t r = 0; r < repeat; ++r)
        bytes += element;
      constants.push_back(bytes);
    }
    out.constants = constants;
    const Json *entries = jsonGet(*s, "entries");
    if (!entries || !entries->is_object())
      return fail(at + ".entries", "expected an object");
    for (const auto &[name, e] : entries->items()) {
      std::string w = at + ".entries." + name;
      const EntrySpec *spec = m.entry(name);
      if (!spec)
        return fail(w, "the manifest has no entry '" + name + "'");
      if (!e.is_object())
        return fail(w, "expected an object");
      GpuEntry ge;
      ge.name = name;
      if (!integer(e, "arena_bytes", w, 0, int64_t(1) << 40, ge.arenaBytes))
        return false;
      const Json *steps = jsonGet(e, "steps"), *results = jsonGet(e, "results");
      if (!steps || !steps->is_array())
        return fail(w + ".steps", "expected an array");
      for (size_t i = 0; i < steps->size(); ++i)
        if (!this->steps((*steps)[i], w + ".steps[" + std::to_string(i) + "]",
                         *spec, ge.arenaBytes, ge.steps))
          return false;
      if (!results || !results->is_array() ||
          results->size() != spec->results.size())
        return fail(w + ".results",
                    "expected " + std::to_string(spec->results.size()) +
                        " buffers, one per result of the entry");
      for (size_t i = 0; i < results->size(); ++i) {
        std::string rw = w + ".results[" + std::to_string(i) + "]";
        GpuBuffer b;
        if (!buffer((*results)[i], rw, *spec, ge.arenaBytes, b))
          return false;
        if (uint64_t(b.bytes) != spec->results[i].byteSize())
          return fail(rw, "holds " + std::to_string(b.bytes) +
                              " bytes but result '" + spec->results[i].name +
                              "' has " +
                              std::to_string(spec->results[i].byteSize()));
        ge.results.push_back(b);
      }
      out.entries.push_back(std::move(ge));
    }
    for (const EntrySpec &e : m.entries)
      if (!out.entry(e.name))
        return fail(at + ".entries", "no schedule for the entry '" + e.name + "'");
    return true;
  }

private:
  const Manifest &m;
  const std::set<std::string> &kernels;
  std::string &err;
  std::vector<std::string> constants;
};

} // namespace

bool parseGpuSchedule(const Manifest &m, const std::string &target,
                      const std::set<std::string> &kernels, GpuSchedule &out,
                      std::string &err) {
  GpuSchedule s;
  if (!Parser(m, kernels, err).parse(target, s))
    return false;
  out = std::move(s);
  return true;
}

} // namespace tgrt
