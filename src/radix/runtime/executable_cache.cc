#include "radix/runtime/executable_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <new>
#include <system_error>
#include <thread>
#include <utility>

namespace radix {

// ---------------------------------------------------------------- CacheKey

void CacheKey::StateDeleter::operator()(XXH64_state_s* s) const { XXH64_freeState(s); }

CacheKey::CacheKey() : state_(XXH64_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH64_reset(state_.get(), 0);
}
CacheKey::~CacheKey() = default;
CacheKey::CacheKey(CacheKey&&) noexcept = default;
CacheKey& CacheKey::operator=(CacheKey&&) noexcept = default;

void CacheKey::update(const void* data, size_t size) { XXH64_update(state_.get(), data, size); }

void CacheKey::update_u64(uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  update(b, sizeof b);
}

CacheKey& CacheKey::add(std::string_view name, std::string_view value) {
  update("s", 1);
  update_u64(name.size());
  update(name.data(), name.size());
  update_u64(value.size());
  update(value.data(), value.size());
  return *this;
}

CacheKey& CacheKey::add(std::string_view name, int64_t value) {
  update("i", 1);
  update_u64(name.size());
  update(name.data(), name.size());
  update_u64(8);
  update_u64(static_cast<uint64_t>(value));
  return *this;
}

uint64_t CacheKey::digest() const { return XXH64_digest(state_.get()); }

std::string CacheKey::hex(uint64_t key) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(key));
  return buf;
}

uint64_t xxhash64(std::string_view bytes) { return XXH64(bytes.data(), bytes.size(), 0); }

// ---------------------------------------------------------------- file I/O

namespace {

constexpr char kMagic[8] = {'R', 'A', 'D', 'I', 'X', 'E', 'X', 'E'};

void put_le(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::string errno_text(int err) { return std::strerror(err); }

// Closes an fd on scope exit unless released (the error paths stay short).
struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) ::close(fd); }
  int release() { return std::exchange(fd, -1); }
};

// Reads the whole file; returns 0 or an errno.
int read_all(int fd, std::string& out) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

// Writes all of [data, data + size); returns 0 or an errno.
int write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

Status io_error(const std::string& path, const std::string& what, int err) {
  return {ErrorCode::kIoError, path + ": " + what + ": " + errno_text(err)};
}

// Unique within this process (counter) and across processes (pid); the
// thread part only makes names easier to attribute when debugging.
std::string temp_path(const std::string& dir, uint64_t key) {
  static std::atomic<uint64_t> counter{0};
  size_t thread_hash = std::hash<std::thread::id>{}(std::this_thread::get_id());
  return dir + "/." + CacheKey::hex(key) + "." + std::to_string(::getpid()) + "." +
         std::to_string(thread_hash) + "." + std::to_string(counter.fetch_add(1)) + ".tmp";
}

}  // namespace

// ---------------------------------------------------------------- ExecutableCache

ExecutableCache::ExecutableCache(std::string dir) : dir_(std::move(dir)) {}

std::string ExecutableCache::entry_path(uint64_t key) const {
  return dir_ + "/" + CacheKey::hex(key) + ".rxc";
}

CacheLookup ExecutableCache::load(uint64_t key) const {
  CacheLookup r;
  r.path = entry_path(key);
  auto reject = [&r](std::string why) {
    r.kind = CacheLookup::Kind::kRejected;
    r.reason = r.path + ": " + std::move(why);
    return std::move(r);
  };
  try {
    Fd f{::open(r.path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) return r;  // no entry (or no folder): kMiss
      return reject("cannot open: " + errno_text(errno));
    }
    // The fd pins the inode: a concurrent rename() over the name cannot
    // change what is read here, so the bytes belong to one complete write.
    std::string data;
    if (int err = read_all(f.fd, data)) return reject("read failed: " + errno_text(err));

    if (data.size() < kHeaderSize)
      return reject("truncated: file has " + std::to_string(data.size()) + " bytes, the header needs " +
                    std::to_string(kHeaderSize) + " (not a complete cache entry)");
    if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
      return reject("bad magic (not a Radix executable cache entry)");
    uint32_t version = static_cast<uint32_t>(get_le(&data[8], 4));
    if (version != kFormatVersion)
      return reject("format version " + std::to_string(version) + ", expected " + std::to_string(kFormatVersion) +
                    " (written by another Radix version)");
    uint32_t header_size = static_cast<uint32_t>(get_le(&data[12], 4));
    if (header_size != kHeaderSize)
      return reject("header size " + std::to_string(header_size) + ", expected " + std::to_string(kHeaderSize));
    uint64_t file_key = get_le(&data[16], 8);
    if (file_key != key)
      return reject("entry is for key " + CacheKey::hex(file_key) + ", not " + CacheKey::hex(key) +
                    " (foreign file)");
    uint64_t length = get_le(&data[24], 8);
    uint64_t present = data.size() - kHeaderSize;
    if (length > present)
      return reject("truncated: header says " + std::to_string(length) + " payload bytes, file has " +
                    std::to_string(present));
    if (length < present)
      return reject("trailing bytes: header says " + std::to_string(length) + " payload bytes, file has " +
                    std::to_string(present));
    uint64_t checksum = get_le(&data[32], 8);
    std::string_view payload(data.data() + kHeaderSize, length);
    if (xxhash64(payload) != checksum) return reject("checksum mismatch (entry is corrupt)");

    data.erase(0, kHeaderSize);
    r.kind = CacheLookup::Kind::kHit;
    r.payload = std::move(data);
    return r;
  } catch (const std::exception& e) {  // e.g. bad_alloc on a huge file
    return reject(std::string("cannot read: ") + e.what());
  }
}

Status ExecutableCache::store(uint64_t key, std::string_view payload) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return {ErrorCode::kIoError, dir_ + ": cannot create cache folder: " + ec.message()};

  unsigned char header[kHeaderSize];
  std::memcpy(header, kMagic, sizeof kMagic);
  put_le(header + 8, kFormatVersion, 4);
  put_le(header + 12, kHeaderSize, 4);
  put_le(header + 16, key, 8);
  put_le(header + 24, payload.size(), 8);
  put_le(header + 32, xxhash64(payload), 8);

  // O_EXCL: never share a temp file, even with a process of the same pid in
  // another PID namespace or a stale leftover of a crashed one; on a clash
  // the next counter value gives a new name.
  std::string tmp;
  Fd f;
  for (int attempt = 0; attempt < 16 && f.fd < 0; ++attempt) {
    tmp = temp_path(dir_, key);
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f.fd < 0 && errno != EEXIST) break;
  }
  if (f.fd < 0) return io_error(tmp, "cannot create temp file", errno);

  auto fail = [&tmp, &f](const std::string& what, int err) {
    if (f.fd >= 0) ::close(f.release());
    ::unlink(tmp.c_str());
    return io_error(tmp, what, err);
  };
  if (int err = write_all(f.fd, reinterpret_cast<const char*>(header), sizeof header)) return fail("write failed", err);
  if (int err = write_all(f.fd, payload.data(), payload.size())) return fail("write failed", err);
  // Data must be on disk before the rename makes it visible, or a crash
  // could leave the final name pointing at an empty or partial file.
  if (::fsync(f.fd) != 0) return fail("fsync failed", errno);
  if (::close(f.release()) != 0) return fail("close failed", errno);

  std::string final_path = entry_path(key);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return io_error(final_path, "cannot rename " + tmp + " into place", err);
  }
  return Status::ok_status();
}

void ExecutableCache::remove(uint64_t key) const { ::unlink(entry_path(key).c_str()); }

}  // namespace radix
