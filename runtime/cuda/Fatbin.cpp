//===- Fatbin.cpp - the images of a CUDA fat binary -----------------------===//
//
// See Fatbin.h. Every size is checked against the bytes present before it
// is used, so a truncated or corrupt section is one line of error.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Fatbin.h"

#include <cstring>

namespace tg::rt::cuda {

namespace {

template <typename T> T readAt(std::string_view d, size_t at) {
  T v;
  std::memcpy(&v, d.data() + at, sizeof v);
  return v;
}

} // namespace

bool parseFatbin(std::string_view data, std::vector<FatbinImage> &images,
                 std::string &err) {
  images.clear();
  if (data.size() < 16 || readAt<uint32_t>(data, 0) != 0xBA55ED50u) {
    err = "not a CUDA fat binary (no 0xBA55ED50 header)";
    return false;
  }
  uint16_t headerSize = readAt<uint16_t>(data, 6);
  uint64_t total = readAt<uint64_t>(data, 8);
  if (headerSize < 16 || headerSize > data.size() ||
      total > data.size() - headerSize) {
    err = "truncated fat binary: its header announces " +
          std::to_string(total) + " bytes of images, " +
          std::to_string(data.size()) + " bytes present";
    return false;
  }
  size_t at = headerSize, end = headerSize + size_t(total);
  while (at < end) {
    std::string where = "fat binary image " + std::to_string(images.size());
    if (end - at < 32) {
      err = where + ": truncated header";
      return false;
    }
    uint16_t kind = readAt<uint16_t>(data, at);
    uint32_t size = readAt<uint32_t>(data, at + 4);
    uint64_t payload = readAt<uint64_t>(data, at + 8);
    if (size < 32 || size > end - at || payload > end - at - size) {
      err = where + ": its sizes exceed the fat binary";
      return false;
    }
    if (kind != 1 && kind != 2) {
      err = where + ": unknown kind " + std::to_string(kind) +
            " (expected 1, PTX, or 2, a cubin)";
      return false;
    }
    FatbinImage img;
    img.ptx = kind == 1;
    img.arch = readAt<uint32_t>(data, at + 28);
    uint32_t stored = readAt<uint32_t>(data, at + 16);
    img.compressed = stored != 0;
    if (img.compressed && size >= 72)
      img.uncompressed = readAt<uint64_t>(data, at + 64);
    if (stored > payload) {
      err = where + ": its compressed size exceeds its payload";
      return false;
    }
    img.payload = data.substr(at + size, img.compressed ? stored : payload);
    images.push_back(img);
    at += size + size_t(payload);
  }
  if (images.empty()) {
    err = "the fat binary holds no image";
    return false;
  }
  return true;
}

bool imageFits(const FatbinImage &image, int major, int minor) {
  unsigned device = unsigned(major * 10 + minor);
  if (image.ptx)
    return image.arch <= device;
  return image.arch / 10 == unsigned(major) && image.arch % 10 <= unsigned(minor);
}

std::string describeImages(const std::vector<FatbinImage> &images) {
  std::string out;
  for (const FatbinImage &i : images)
    out += (out.empty() ? "sm_" : ", sm_") + std::to_string(i.arch) +
           (i.ptx ? " PTX" : " cubin");
  return out;
}

} // namespace tg::rt::cuda
