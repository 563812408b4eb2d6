//===- Data.h - training data: IDX, Fashion-MNIST, token files --*- C++ -*-===//
//
// Readers for the data formats tg-run trains on: IDX files (gzip or plain,
// read through zlib), the Fashion-MNIST set that Debian's
// dataset-fashion-mnist installs, flat binary token files (uint16/uint32,
// little-endian) cut into (tokens, targets) windows for language models, and
// batching helpers that shape rows to a model input. A missing or corrupt
// file is one line of error.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_DATA_H
#define TG_RUNTIME_DATA_H

#include "runtime/Tensor.h"

#include <string>
#include <vector>

namespace tgrt {

/// Where Debian's dataset-fashion-mnist puts the files.
inline constexpr const char *kFashionMnistDir =
    "/usr/share/datasets/fashion-mnist";

/// An IDX array: type code (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32,
/// 0x0E f64), dimensions, and the raw big-endian element bytes.
struct IdxArray {
  uint8_t type = 0;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Reads an IDX file (gzip-compressed or not). With `headerOnly` only the
/// magic and dimensions are read. Errors:
/// "t.gz: truncated: expected 47040000 data bytes, found 1024".
bool readIdx(const std::string &path, IdxArray &out, std::string &err,
             bool headerOnly = false);

/// A labelled data set held in memory: `inputs` rows along dimension 0.
struct Dataset {
  Tensor inputs;          ///< f32 [N, ...] (images scaled to [0, 1])
  Tensor labels;          ///< i64 [N]
  std::string labelsPath; ///< the file the labels came from, for errors
  int64_t size() const { return labels.shape.empty() ? 0 : labels.shape[0]; }
};

/// Loads Fashion-MNIST's train (60000) or test (10000) split from `dir`.
bool loadFashionMnist(const std::string &dir, bool train, Dataset &out,
                      std::string &err);

/// Reads a flat binary token file of `width` (2 or 4) byte little-endian
/// unsigned integers.
bool readTokenFile(const std::string &path, int width,
                   std::vector<uint32_t> &tokens, std::string &err);

/// Number of (tokens, targets) windows of `batch` x `seq` in `n` tokens
/// (consecutive, non-overlapping; each window needs one extra token).
int64_t tokenBatches(uint64_t n, int64_t batch, int64_t seq);
/// Batch `index`: tokens[b][t] = tok[start + b*seq + t] and targets shifted
/// by one, as i64 [batch, seq].
void tokenBatch(const std::vector<uint32_t> &tok, int64_t index, int64_t batch,
                int64_t seq, Tensor &tokens, Tensor &targets);

/// Copies rows [begin, begin + count) of `all` (rows along dimension 0)
/// into a tensor of `dtype` and `shape` (shape[0] == count, the same
/// elements per row). Rows past the end wrap around to the start, so a last
/// partial batch is padded; callers count only the real rows.
bool sliceRows(const Tensor &all, int64_t begin, int64_t count, DType dtype,
               const std::vector<int64_t> &shape, Tensor &out,
               std::string &err);

/// The values an integer input that indexes something (class labels, token
/// ids, embedding rows) may hold: [0, bound), and `ignore` too where the
/// model says so (cross_entropy's ignore_index). A bound of 0 is unknown:
/// every value passes.
struct IndexRange {
  int64_t bound = 0;
  bool hasIgnore = false;
  int64_t ignore = 0;
  bool contains(int64_t v) const {
    return bound <= 0 || (v >= 0 && v < bound) || (hasIgnore && v == ignore);
  }
  /// "[0, 10)" or "[0, 10) (or the ignore_index -100)".
  std::string str() const;
};

/// Checks every element of the integer tensor `t` (or of a token list)
/// against `range`; false with "<where>: value 12 at index 5 is outside
/// [0, 10), the range of the model's input 'labels'". Float tensors pass.
bool checkIndices(const Tensor &t, const IndexRange &range,
                  const std::string &where, const std::string &input,
                  std::string &err);
bool checkIndices(const std::vector<uint32_t> &tokens, const IndexRange &range,
                  const std::string &where, const std::string &input,
                  std::string &err);

} // namespace tgrt

#endif // TG_RUNTIME_DATA_H
