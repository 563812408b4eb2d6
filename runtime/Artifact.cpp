//===- Artifact.cpp - the .tgx container: reader and writer ---------------===//
//
// Validation order matters for the messages: the header, then the section
// table and each section's extent (so truncation names what it cut), then
// the recorded file size, the whole-file CRC, and each section's CRC.
//
//===----------------------------------------------------------------------===//
#include "runtime/Artifact.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace tgrt {

namespace {
constexpr size_t kHeader = 32, kEntry = 64, kNameBytes = 40, kAlign = 64;
constexpr uint32_t kMaxSections = 4096;

void put32(std::string &s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s[at + i] = static_cast<char>(v >> (8 * i));
}
void put64(std::string &s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s[at + i] = static_cast<char>(v >> (8 * i));
}
uint32_t get32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}
uint64_t get64(std::string_view s, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}
std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}
/// CRC of the whole file with bytes [12,16) read as zero.
uint32_t fileCrc(std::string_view b) {
  static const char zeros[4] = {0, 0, 0, 0};
  uint32_t c = crc32Of(b.substr(0, 12));
  c = crc32Of(std::string_view(zeros, 4), c);
  return crc32Of(b.substr(16), c);
}
} // namespace

uint32_t crc32Of(std::string_view data, uint32_t crc) {
  uLong c = crc;
  // zlib takes uInt lengths; feed large inputs in chunks.
  while (!data.empty()) {
    size_t n = std::min<size_t>(data.size(), 1u << 30);
    c = ::crc32(c, reinterpret_cast<const Bytef *>(data.data()),
                static_cast<uInt>(n));
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(c);
}

uint64_t machineMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : 0;
}

bool fitsInMemory(uint64_t bytes, const std::string &what, std::string &err) {
  uint64_t physical = machineMemoryBytes();
  if (physical == 0 || bytes <= physical)
    return true;
  err = what + " needs " + std::to_string(bytes) +
        " bytes, more than this machine's " + std::to_string(physical) +
        " bytes of memory";
  return false;
}

bool statRegularInput(const std::string &path, uint64_t &size,
                      std::string &err) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    err = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    // A device or pipe has no size to check against: /dev/zero would be
    // read until memory runs out.
    err = "'" + path + "' is not a regular file";
    return false;
  }
  size = static_cast<uint64_t>(st.st_size);
  return true;
}

bool readFile(const std::string &path, std::string &out, std::string &err) {
  uint64_t size = 0;
  if (!statRegularInput(path, size, err) ||
      !fitsInMemory(size, "'" + path + "'", err))
    return false;
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    err = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  out.clear();
  try {
    out.reserve(size);
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
      out.append(buf, n);
  } catch (const std::bad_alloc &) {
    std::fclose(f);
    err = "cannot allocate " + std::to_string(size) + " bytes to read '" +
          path + "'";
    return false;
  }
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) {
    err = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

namespace {
/// The temporary file a write is filling now, for the signal handler
/// (a fixed buffer: the handler may only call async-signal-safe functions).
char gPendingTemp[4096];
volatile sig_atomic_t gHavePendingTemp = 0;

void setPending(const std::string &tmp) {
  gHavePendingTemp = 0;
  size_t n = std::min(tmp.size(), sizeof gPendingTemp - 1);
  std::memcpy(gPendingTemp, tmp.data(), n);
  gPendingTemp[n] = '\0';
  gHavePendingTemp = n == tmp.size();
}

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

/// Our temporaries are "<file>.tmp.<pid>.<random>"; one whose process is
/// gone (killed during a save) is removed before the next save of <file>.
void sweepStaleTemporaries(const std::string &path) {
  std::string dir = dirOf(path);
  std::string base = path.substr(path.rfind('/') == std::string::npos
                                     ? 0
                                     : path.rfind('/') + 1);
  std::string prefix = base + ".tmp.";
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  while (struct dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    char *end = nullptr;
    long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || !end || *end != '.' || std::strlen(end) != 7)
      continue;
    if (pid != ::getpid() && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH)
      ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
}

/// Creates "<path>.tmp.<pid>.XXXXXX" beside `path`.
int createTemporary(const std::string &path, std::string &tmp,
                    std::string &err) {
  tmp = path + ".tmp." + std::to_string(::getpid()) + ".XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    err = "cannot write '" + path + "': " + std::strerror(errno);
  return fd;
}
} // namespace

void removePendingTemporary() {
  if (gHavePendingTemp)
    ::unlink(gPendingTemp);
  gHavePendingTemp = 0;
}

bool checkOutputPath(const std::string &path, std::string &err) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    err = "cannot write '" + path + "': not a regular file";
    return false;
  }
  return true;
}

bool checkWritable(const std::string &path, std::string &err) {
  if (!checkOutputPath(path, err))
    return false;
  std::string tmp;
  int fd = createTemporary(path, tmp, err);
  if (fd < 0)
    return false;
  ::close(fd);
  ::unlink(tmp.c_str());
  return true;
}

bool writeFileAtomic(const std::string &path, std::string_view data,
                     std::string &err) {
  // rename() would replace a device or a FIFO with a regular file.
  if (!checkOutputPath(path, err))
    return false;
  sweepStaleTemporaries(path);
  std::string tmp;
  int fd = createTemporary(path, tmp, err);
  if (fd < 0)
    return false;
  setPending(tmp);
  auto fail = [&](const std::string &what) {
    err = what + "'" + path + "': " + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    removePendingTemporary();
    return false;
  };
  const char *p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = ENOSPC;
      return fail("cannot write ");
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  // mkstemp creates 0600; artifacts and checkpoints are ordinary files.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0)
    return fail("cannot write ");
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return fail("cannot write ");
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return fail("cannot rename to ");
  gHavePendingTemp = 0;
  return true;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

bool ArtifactWriter::addSection(std::string name, std::string_view bytes,
                                std::string &err) {
  if (name.empty() || name.size() > kMaxSectionName ||
      name.find('\0') != std::string::npos) {
    err = "invalid section name '" + name + "' (1 to " +
          std::to_string(kMaxSectionName) + " bytes, no NUL)";
    return false;
  }
  for (auto &s : sections_)
    if (s.first == name) {
      s.second.assign(bytes);
      return true;
    }
  sections_.emplace_back(std::move(name), std::string(bytes));
  return true;
}

std::string ArtifactWriter::bytes() const {
  size_t off = kHeader + kEntry * sections_.size();
  std::vector<size_t> offsets;
  for (const auto &s : sections_) {
    off = (off + kAlign - 1) / kAlign * kAlign;
    offsets.push_back(off);
    off += s.second.size();
  }
  std::string out(off, '\0');
  std::memcpy(out.data(), "TGX1", 4);
  put32(out, 4, kArtifactVersion);
  put32(out, 8, static_cast<uint32_t>(sections_.size()));
  put64(out, 16, out.size());
  for (size_t i = 0; i < sections_.size(); ++i) {
    const auto &s = sections_[i];
    size_t e = kHeader + kEntry * i;
    std::memcpy(&out[e], s.first.data(), s.first.size());
    put64(out, e + kNameBytes, offsets[i]);
    put64(out, e + kNameBytes + 8, s.second.size());
    put32(out, e + kNameBytes + 16, crc32Of(s.second));
    if (!s.second.empty())
      std::memcpy(&out[offsets[i]], s.second.data(), s.second.size());
  }
  put32(out, 12, fileCrc(out));
  return out;
}

bool ArtifactWriter::write(const std::string &path, std::string &err) const {
  return writeFileAtomic(path, bytes(), err);
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

std::unique_ptr<Artifact> Artifact::open(const std::string &path,
                                         std::string &err) {
  std::string bytes;
  if (!readFile(path, bytes, err))
    return nullptr;
  return fromBytes(std::move(bytes), path, err);
}

std::unique_ptr<Artifact> Artifact::fromBytes(std::string bytes,
                                              const std::string &label,
                                              std::string &err) {
  std::string_view b = bytes;
  const uint64_t size = b.size();
  auto fail = [&](const std::string &msg) {
    err = label + ": " + msg;
    return nullptr;
  };
  auto has = " but the file has " + std::to_string(size) + " bytes";
  if (size < 4 && std::string_view("TGX1").substr(0, size) == b)
    return fail("truncated: the header needs " + std::to_string(kHeader) +
                " bytes" + has);
  if (size < 4 || std::memcmp(b.data(), "TGX1", 4) != 0)
    return fail(size >= 4 && std::memcmp(b.data(), "TGX", 3) == 0
                    ? "unknown container magic '" + std::string(b.substr(0, 4)) +
                          "' (this runtime reads TGX1)"
                    : "not a .tgx artifact (the file does not start with "
                      "'TGX1')");
  if (size < kHeader)
    return fail("truncated: the header needs " + std::to_string(kHeader) +
                " bytes" + has);
  uint32_t version = get32(b, 4);
  if (version != kArtifactVersion)
    return fail("format version " + std::to_string(version) +
                " is not supported (this runtime reads version " +
                std::to_string(kArtifactVersion) + ")");
  uint32_t count = get32(b, 8);
  if (count > kMaxSections)
    return fail("corrupt: " + std::to_string(count) +
                " sections (at most " + std::to_string(kMaxSections) + ")");
  uint64_t tableEnd = kHeader + uint64_t(kEntry) * count;
  if (tableEnd > size)
    return fail("truncated: the section table ends at byte " +
                std::to_string(tableEnd) + has);

  auto artifact = std::unique_ptr<Artifact>(new Artifact());
  for (uint32_t i = 0; i < count; ++i) {
    size_t e = kHeader + kEntry * i;
    std::string_view raw = b.substr(e, kNameBytes);
    size_t nul = raw.find('\0');
    if (nul == 0 || nul == std::string_view::npos ||
        raw.find_first_not_of('\0', nul) != std::string_view::npos)
      return fail("corrupt: section " + std::to_string(i) +
                  " has an invalid name");
    Section s{std::string(raw.substr(0, nul)), get64(b, e + kNameBytes),
              get64(b, e + kNameBytes + 8), get32(b, e + kNameBytes + 16)};
    if (artifact->has(s.name))
      return fail("corrupt: section '" + s.name + "' appears twice");
    if (s.offset < tableEnd || s.offset > (uint64_t(1) << 62) ||
        s.size > (uint64_t(1) << 62))
      return fail("corrupt: section '" + s.name + "' has offset " +
                  std::to_string(s.offset) + " and size " +
                  std::to_string(s.size));
    if (s.offset + s.size > size)
      return fail("truncated: section '" + s.name + "' ends at byte " +
                  std::to_string(s.offset + s.size) + has);
    artifact->sections_.push_back(std::move(s));
  }
  uint64_t recorded = get64(b, 16);
  if (recorded > size)
    return fail("truncated: the header records " + std::to_string(recorded) +
                " bytes" + has);
  if (recorded < size)
    return fail("corrupt: the header records " + std::to_string(recorded) +
                " bytes" + has);
  uint32_t want = get32(b, 12), got = fileCrc(b);
  if (want != got)
    return fail("corrupt: file checksum mismatch (CRC-32 " + hex32(got) +
                ", header says " + hex32(want) + ")");
  for (const Section &s : artifact->sections_) {
    uint32_t c = crc32Of(b.substr(s.offset, s.size));
    if (c != s.crc)
      return fail("corrupt: section '" + s.name + "' checksum mismatch (CRC-32 " +
                  hex32(c) + ", table says " + hex32(s.crc) + ")");
  }
  artifact->version_ = version;
  artifact->path_ = label;
  artifact->bytes_ = std::move(bytes);
  return artifact;
}

bool Artifact::has(std::string_view name) const {
  for (const Section &s : sections_)
    if (s.name == name)
      return true;
  return false;
}

std::string_view Artifact::section(std::string_view name) const {
  for (const Section &s : sections_)
    if (s.name == name)
      return std::string_view(bytes_).substr(s.offset, s.size);
  return {};
}

} // namespace tgrt
