//===- Data.cpp - training data: IDX, Fashion-MNIST, token files ----------===//
//
// zlib's gzread reads gzip and plain files alike, so an uncompressed IDX
// file works too. Sizes are checked against the header before allocating.
//
//===----------------------------------------------------------------------===//
#include "runtime/Data.h"
#include "runtime/Artifact.h"

#include <cerrno>
#include <cstring>
#include <zlib.h>

namespace tgrt {

namespace {
/// Reads up to `n` bytes; returns how many were read (-1 on a zlib error).
int64_t gzReadFully(gzFile f, void *buf, uint64_t n) {
  uint64_t done = 0;
  while (done < n) {
    unsigned chunk = static_cast<unsigned>(std::min<uint64_t>(n - done, 1u << 30));
    int r = gzread(f, static_cast<char *>(buf) + done, chunk);
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    done += static_cast<uint64_t>(r);
  }
  return static_cast<int64_t>(done);
}

std::string gzError(gzFile f) {
  int code = 0;
  const char *msg = gzerror(f, &code);
  return msg && *msg ? msg : "read error";
}
} // namespace

bool readIdx(const std::string &path, IdxArray &out, std::string &err,
             bool headerOnly) {
  uint64_t fileSize = 0;
  if (!statRegularInput(path, fileSize, err))
    return false;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    err = "cannot open '" + path + "': " +
          (errno ? std::strerror(errno) : "out of memory");
    return false;
  }
  auto fail = [&](const std::string &msg) {
    err = path + ": " + msg;
    gzclose(f);
    return false;
  };
  unsigned char magic[4];
  int64_t got = gzReadFully(f, magic, 4);
  if (got < 0)
    return fail(gzError(f));
  if (got < 4)
    return fail("truncated: the IDX header needs 4 bytes, found " +
                std::to_string(got));
  static const uint8_t kTypes[] = {0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E};
  static const int kSizes[] = {1, 1, 2, 4, 4, 8};
  int elem = 0;
  for (int i = 0; i < 6; ++i)
    if (magic[2] == kTypes[i])
      elem = kSizes[i];
  if (magic[0] != 0 || magic[1] != 0 || elem == 0 || magic[3] == 0 ||
      magic[3] > 8) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%02x %02x %02x %02x", magic[0], magic[1],
                  magic[2], magic[3]);
    return fail(std::string("not an IDX file (magic ") + buf + ")");
  }
  IdxArray a;
  a.type = magic[2];
  uint64_t numel = 1;
  for (int i = 0; i < magic[3]; ++i) {
    unsigned char d[4];
    got = gzReadFully(f, d, 4);
    if (got < 0)
      return fail(gzError(f));
    if (got < 4)
      return fail("truncated: the IDX header ends inside dimension " +
                  std::to_string(i));
    uint32_t v = (uint32_t(d[0]) << 24) | (uint32_t(d[1]) << 16) |
                 (uint32_t(d[2]) << 8) | d[3];
    a.dims.push_back(v);
    if (v != 0 && numel > (uint64_t(1) << 40) / v)
      return fail("dimensions too large");
    numel *= v;
  }
  if (!headerOnly) {
    // The header's size is checked against the file and the machine before
    // anything is allocated: a plain file holds exactly its data, and gzip
    // cannot compress better than 1032:1 (RFC 1951's longest match).
    uint64_t want = numel * elem, header = 4 + 4 * uint64_t(magic[3]);
    uint64_t most = gzdirect(f) ? fileSize - std::min(fileSize, header)
                                : fileSize * 1032;
    if (want > most)
      return fail("truncated: the header claims " + std::to_string(want) +
                  " data bytes but the file has " + std::to_string(fileSize) +
                  " bytes" + (gzdirect(f) ? "" : " of gzip data"));
    if (!fitsInMemory(want, "the data", err))
      return fail(err);
    try {
      a.data.resize(want);
    } catch (const std::bad_alloc &) {
      return fail("cannot allocate " + std::to_string(want) + " bytes");
    }
    got = gzReadFully(f, a.data.data(), want);
    if (got < 0)
      return fail(gzError(f));
    if (static_cast<uint64_t>(got) < want)
      return fail("truncated: expected " + std::to_string(want) +
                  " data bytes, found " + std::to_string(got));
    char extra;
    got = gzReadFully(f, &extra, 1);
    if (got < 0)
      return fail(gzError(f));
    if (got > 0)
      return fail("unexpected data after " + std::to_string(want) +
                  " data bytes");
  }
  gzclose(f);
  out = std::move(a);
  return true;
}

bool loadFashionMnist(const std::string &dir, bool train, Dataset &out,
                      std::string &err) {
  std::string prefix = dir + "/" + (train ? "train" : "t10k");
  IdxArray images, labels;
  if (!readIdx(prefix + "-images-idx3-ubyte.gz", images, err) ||
      !readIdx(prefix + "-labels-idx1-ubyte.gz", labels, err))
    return false;
  if (images.type != 0x08 || images.dims.size() != 3) {
    err = prefix + "-images-idx3-ubyte.gz: expected unsigned bytes [N, rows, cols]";
    return false;
  }
  if (labels.type != 0x08 || labels.dims.size() != 1 ||
      labels.dims[0] != images.dims[0]) {
    err = prefix + "-labels-idx1-ubyte.gz: expected " +
          std::to_string(images.dims[0]) + " unsigned byte labels";
    return false;
  }
  Dataset d;
  d.inputs = Tensor::zeros(DType::F32, images.dims);
  float *px = d.inputs.as<float>();
  for (size_t i = 0; i < images.data.size(); ++i)
    px[i] = images.data[i] / 255.0f;
  d.labels = Tensor::zeros(DType::I64, {labels.dims[0]});
  int64_t *py = d.labels.as<int64_t>();
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] > 9) {
      err = prefix + "-labels-idx1-ubyte.gz: label " +
            std::to_string(labels.data[i]) + " at index " + std::to_string(i) +
            " is not a class 0-9";
      return false;
    }
    py[i] = labels.data[i];
  }
  d.labelsPath = prefix + "-labels-idx1-ubyte.gz";
  out = std::move(d);
  return true;
}

bool readTokenFile(const std::string &path, int width,
                   std::vector<uint32_t> &tokens, std::string &err) {
  if (width != 1 && width != 2 && width != 4) {
    err = "token width must be 1, 2 or 4 bytes";
    return false;
  }
  std::string bytes;
  if (!readFile(path, bytes, err))
    return false;
  if (bytes.size() % width) {
    err = path + ": " + std::to_string(bytes.size()) +
          " bytes is not a whole number of uint" + std::to_string(width * 8) +
          " tokens";
    return false;
  }
  tokens.resize(bytes.size() / width);
  const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  for (size_t i = 0; i < tokens.size(); ++i, p += width)
    tokens[i] = width == 1   ? uint32_t(p[0])
                : width == 2 ? uint32_t(p[0]) | uint32_t(p[1]) << 8
                             : uint32_t(p[0]) | uint32_t(p[1]) << 8 |
                                   uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  return true;
}

int64_t tokenBatches(uint64_t n, int64_t batch, int64_t seq) {
  if (batch <= 0 || seq <= 0 || n < 1)
    return 0;
  uint64_t per = static_cast<uint64_t>(batch) * static_cast<uint64_t>(seq);
  return static_cast<int64_t>((n - 1) / per);
}

void tokenBatch(const std::vector<uint32_t> &tok, int64_t index, int64_t batch,
                int64_t seq, Tensor &tokens, Tensor &targets) {
  tokens = Tensor::zeros(DType::I64, {batch, seq});
  targets = Tensor::zeros(DType::I64, {batch, seq});
  uint64_t start = static_cast<uint64_t>(index) * batch * seq;
  int64_t *x = tokens.as<int64_t>(), *y = targets.as<int64_t>();
  for (int64_t i = 0; i < batch * seq; ++i) {
    x[i] = tok[start + i];
    y[i] = tok[start + i + 1];
  }
}

bool sliceRows(const Tensor &all, int64_t begin, int64_t count, DType dtype,
               const std::vector<int64_t> &shape, Tensor &out,
               std::string &err) {
  int64_t rows = all.shape.empty() ? 0 : all.shape[0];
  uint64_t perRow = rows ? all.numel() / rows : 0, want = 0;
  if (rows == 0 || shape.empty() || shape[0] != count ||
      !shapeNumel(shape, want) || want != perRow * count) {
    err = "cannot shape rows of " + shapeString(all.shape) + " into " +
          shapeString(shape);
    return false;
  }
  Tensor raw;
  raw.dtype = all.dtype;
  raw.shape = shape;
  size_t rowBytes = perRow * dtypeSize(all.dtype);
  raw.bytes.resize(rowBytes * count);
  for (int64_t r = 0; r < count; ++r)
    std::memcpy(raw.bytes.data() + r * rowBytes,
                all.bytes.data() + ((begin + r) % rows) * rowBytes, rowBytes);
  if (dtype == all.dtype) {
    out = std::move(raw);
    return true;
  }
  return convertTensor(raw, dtype, shape, out, err);
}

std::string IndexRange::str() const {
  std::string s = "[0, " + std::to_string(bound) + ")";
  return hasIgnore ? s + " (or the ignore_index " + std::to_string(ignore) + ")"
                   : s;
}

namespace {
template <class At>
bool checkEach(uint64_t n, At at, const IndexRange &range,
               const std::string &where, const std::string &input,
               std::string &err) {
  if (range.bound <= 0)
    return true;
  for (uint64_t i = 0; i < n; ++i) {
    int64_t v = at(i);
    if (!range.contains(v)) {
      err = where + ": value " + std::to_string(v) + " at index " +
            std::to_string(i) + " is outside " + range.str() +
            ", the range of the model's input '" + input + "'";
      return false;
    }
  }
  return true;
}
} // namespace

bool checkIndices(const Tensor &t, const IndexRange &range,
                  const std::string &where, const std::string &input,
                  std::string &err) {
  switch (t.dtype) {
  case DType::I64:
    return checkEach(t.numel(), [&](uint64_t i) { return t.as<int64_t>()[i]; },
                     range, where, input, err);
  case DType::I32:
    return checkEach(t.numel(), [&](uint64_t i) { return int64_t(t.as<int32_t>()[i]); },
                     range, where, input, err);
  default:
    return true;
  }
}

bool checkIndices(const std::vector<uint32_t> &tokens, const IndexRange &range,
                  const std::string &where, const std::string &input,
                  std::string &err) {
  return checkEach(tokens.size(), [&](uint64_t i) { return int64_t(tokens[i]); },
                   range, where, input, err);
}

} // namespace tgrt
