//===- Artifact.h - the .tgx container: reader and writer -------*- C++ -*-===//
//
// A `.tgx` file is one versioned, checksummed container of named sections:
// "manifest" (JSON, see docs/artifact.md), "cpu.so" (a shared object with
// the CPU entry points) and optional ones such as "gpu.fatbin". The reader
// validates everything before handing out a byte, so a truncated, corrupt or
// wrong-version file is one line of error, never a crash. The writer is kept
// free of other runtime headers so `tgc` can use it.
//
// Layout (little-endian; docs/artifact.md has the table):
//   0  "TGX1"   4 u32 version   8 u32 section count   12 u32 file CRC-32
//   16 u64 file size   24 u64 reserved
//   32 section table, 64 bytes each: name[40] (NUL-padded), u64 offset,
//      u64 size, u32 CRC-32 of the section, u32 reserved
//   then the sections' bytes, each starting at a multiple of 64.
// The file CRC-32 covers the whole file with its own 4 bytes read as zero.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_ARTIFACT_H
#define TG_RUNTIME_ARTIFACT_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tgrt {

/// The container format version this runtime reads and writes.
inline constexpr uint32_t kArtifactVersion = 1;
/// Longest section name (bytes), excluding the terminating NUL.
inline constexpr size_t kMaxSectionName = 39;

/// Builds a `.tgx` file from named sections.
class ArtifactWriter {
public:
  /// Adds (or replaces) a section. Returns false with `err` for an empty,
  /// too long or NUL-containing name.
  bool addSection(std::string name, std::string_view bytes, std::string &err);
  /// Serialises the container.
  std::string bytes() const;
  /// Writes it atomically (a temporary file in the same folder, fsync,
  /// rename). Returns false with `err` ("cannot write 'x.tgx': ...").
  bool write(const std::string &path, std::string &err) const;

private:
  std::vector<std::pair<std::string, std::string>> sections_;
};

/// A validated, read-only `.tgx` file held in memory.
class Artifact {
public:
  /// Reads and validates `path`. Errors read like
  /// "model.tgx: truncated: section 'cpu.so' ends at byte 9812 but the file
  /// has 4000 bytes".
  static std::unique_ptr<Artifact> open(const std::string &path,
                                        std::string &err);
  /// Validates a container already in memory; `label` prefixes errors.
  static std::unique_ptr<Artifact> fromBytes(std::string bytes,
                                             const std::string &label,
                                             std::string &err);

  struct Section {
    std::string name;
    uint64_t offset, size;
    uint32_t crc;
  };
  const std::vector<Section> &sections() const { return sections_; }
  bool has(std::string_view name) const;
  /// The bytes of a section (empty if absent).
  std::string_view section(std::string_view name) const;
  uint32_t version() const { return version_; }
  const std::string &path() const { return path_; }

private:
  std::string bytes_, path_;
  uint32_t version_ = 0;
  std::vector<Section> sections_;
};

/// CRC-32 (zlib's polynomial) of `data`, continuing from `crc`.
uint32_t crc32Of(std::string_view data, uint32_t crc = 0);

/// Writes `data` to `path` atomically: temp file "<path>.tmp.<pid>.XXXXXX"
/// in the same folder, fsync, rename. Refuses a `path` that exists and is not
/// a regular file (a device, FIFO or folder), and first removes temporaries
/// of `path` left by a process that no longer runs (killed during a save).
/// Shared by the artifact writer and the checkpoint writer.
bool writeFileAtomic(const std::string &path, std::string_view data,
                     std::string &err);
/// Checks, before any work, that writeFileAtomic(path) can succeed as far as
/// the file system can tell now: the target is absent or a regular file and
/// its folder takes a new file. Errors: "cannot write 'p': Permission denied".
bool checkWritable(const std::string &path, std::string &err);
/// False with "cannot write 'p': not a regular file" for an existing
/// non-regular `path`.
bool checkOutputPath(const std::string &path, std::string &err);
/// Removes the temporary file of a writeFileAtomic in progress, if any.
/// Async-signal-safe: for a signal handler that exits during a save.
void removePendingTemporary();
/// Reads a whole regular file. Errors: "cannot open 'p': No such file or
/// directory", "'/dev/zero' is not a regular file", or a size beyond this
/// machine's memory.
bool readFile(const std::string &path, std::string &out, std::string &err);
/// Stats an input file: false with one line unless it is a regular file.
bool statRegularInput(const std::string &path, uint64_t &size,
                      std::string &err);
/// Physical memory of this machine in bytes (0 if unknown).
uint64_t machineMemoryBytes();
/// False with "<what> needs N bytes, more than this machine's M bytes of
/// memory" when `bytes` exceeds physical memory: checked before allocating a
/// size read from a file.
bool fitsInMemory(uint64_t bytes, const std::string &what, std::string &err);

} // namespace tgrt

#endif // TG_RUNTIME_ARTIFACT_H
