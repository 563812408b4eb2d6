//===- Fatbin.h - the images of a CUDA fat binary ---------------*- C++ -*-===//
//
// A fat binary (what `fatbinary --create` writes, the artifact's gpu.fatbin
// section) holds one image per architecture: cubins (ELF) and PTX, each
// possibly compressed. The runtime reads the image headers only, to refuse
// a GPU the binary has no code for before the driver does (naming the
// images it has), and to pick the launch schedule of the image the driver
// will load. The layout (not documented by NVIDIA, stable since CUDA 10):
//
//   header   u32 magic 0xBA55ED50, u16 version 1, u16 header size,
//            u64 bytes of the images that follow
//   image    u16 kind (1 PTX, 2 ELF), u16 version, u32 header size,
//            u64 payload size (padded), u32 compressed size (0: stored),
//            u32, u16 minor, u16 major (of the format), u32 arch (80 =
//            sm_80), ..., u64 uncompressed size at byte 64 of a compressed
//            image's header; then the payload.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_CUDA_FATBIN_H
#define TG_RUNTIME_CUDA_FATBIN_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tg::rt::cuda {

/// One image of a fat binary.
struct FatbinImage {
  bool ptx = false;          ///< PTX text, else a cubin
  unsigned arch = 0;         ///< 80 for sm_80, 90 for sm_90(a)
  bool compressed = false;   ///< stored compressed (zstd or LZ4)
  uint64_t uncompressed = 0; ///< size when decompressed (0: unknown)
  std::string_view payload;  ///< the stored bytes
};

/// Parses the image headers of `data`. False with one line in `err` for
/// anything that is not a well-formed fat binary.
bool parseFatbin(std::string_view data, std::vector<FatbinImage> &images,
                 std::string &err);

/// Whether the driver can run `image` on a device of compute capability
/// major.minor: a cubin of the same major and a minor not above the
/// device's, or PTX for an architecture not above it (JIT-compiled).
bool imageFits(const FatbinImage &image, int major, int minor);

/// "sm_80 cubin, sm_90 cubin, sm_80 PTX".
std::string describeImages(const std::vector<FatbinImage> &images);

} // namespace tg::rt::cuda

#endif // TG_RUNTIME_CUDA_FATBIN_H
