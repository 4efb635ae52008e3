// ExecutableCache: an on-disk store of compiled executables, one file per
// 64-bit key, so a process can skip recompiling what an earlier one built.
//
//   CacheKey k;
//   k.add("ir", module_text).add("target", triple).add("opt_level", 2);
//   ExecutableCache cache(dir);
//   CacheLookup hit = cache.load(k.digest());
//   if (hit.kind == CacheLookup::Kind::kHit) { ... use hit.payload ... }
//   else { bytes = compile(); if (hit.kind == kRejected) cache.remove(key); cache.store(key, bytes); }
//
// Entries are validated on every load (magic, version, key, length,
// checksum), so a corrupt, truncated or foreign file is reported, never used.
// Writes go to a temp file that is renamed into place, so readers see either
// no entry or a complete one, whatever other threads, processes or crashes do.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "radix/core/status.h"

struct XXH64_state_s;  // <xxhash.h>'s XXH64_state_t, kept out of this header

namespace radix {

// Builds a 64-bit cache key (XXH64, seed 0) from named fields. Each field is
// hashed as a type tag, the name and the value, the name and value each
// preceded by its length, so ("ab", "c") and ("a", "bc") differ, and a string
// field never collides with an integer field by byte coincidence.
// Field order matters: callers add fields in a fixed order. Move-only.
class CacheKey {
 public:
  CacheKey();
  ~CacheKey();
  CacheKey(CacheKey&&) noexcept;
  CacheKey& operator=(CacheKey&&) noexcept;
  CacheKey(const CacheKey&) = delete;
  CacheKey& operator=(const CacheKey&) = delete;

  CacheKey& add(std::string_view name, std::string_view value);
  // The value is hashed as 8 little-endian bytes, the same on every host.
  CacheKey& add(std::string_view name, int64_t value);
  // The hash of the fields added so far; more fields may still be added.
  uint64_t digest() const;
  // 16 lowercase hex digits, zero-padded: the entry's file name stem.
  static std::string hex(uint64_t key);

 private:
  struct StateDeleter {
    void operator()(XXH64_state_s* s) const;
  };
  void update(const void* data, size_t size);
  void update_u64(uint64_t v);
  std::unique_ptr<XXH64_state_s, StateDeleter> state_;
};

// One-shot XXH64 with seed 0 (the payload checksum).
uint64_t xxhash64(std::string_view bytes);

// What a lookup found.
struct CacheLookup {
  // kRejected: a file exists under the key but is corrupt, truncated,
  // foreign, of another format version or unreadable; the caller should
  // recompile and may remove() it so the new result replaces it.
  enum class Kind { kHit, kMiss, kRejected };
  Kind kind = Kind::kMiss;
  std::string payload;  // on kHit
  std::string reason;   // on kRejected: what was wrong, naming the file path
  std::string path;     // the entry path, whatever the kind
};

// A folder of entries, one file per key: "<dir>/<16 hex>.rxc".
//
// File format (little-endian): a fixed 40-byte header, then the payload.
//   magic "RADIXEXE" (8 bytes), format version u32, header size u32 (40),
//   key u64, payload length u64, payload checksum u64 (XXH64 of the payload)
//
// Thread-safe: the object is immutable and every call works on the files
// alone, so any number of threads and processes may share a folder.
class ExecutableCache {
 public:
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr uint32_t kHeaderSize = 40;

  // The folder need not exist yet: store() creates it.
  explicit ExecutableCache(std::string dir);

  const std::string& dir() const { return dir_; }
  std::string entry_path(uint64_t key) const;

  // Reads and validates the entry for `key`. A missing file is kMiss; any
  // mismatch (short file, bad magic, other format version or header size,
  // header key != key, payload length != bytes present, checksum mismatch)
  // or a read error is kRejected with a reason naming the path. Never throws.
  CacheLookup load(uint64_t key) const;

  // Creates the folder (and parents) if needed, then writes atomically: a
  // unique temp file in the same folder ("<dir>/.<hex>.<pid>.<thread>.<n>.tmp",
  // hidden, and on the same file system so rename() is atomic) is written
  // fully and fsync'ed, then renamed over the final name. The temp file is
  // removed on any failure, so no half-written entry ever appears under the
  // final name. Errors are kIoError naming the path and the system's reason.
  Status store(uint64_t key, std::string_view payload) const;

  // Removes the entry (after a rejected load, so the recompiled result
  // replaces it). A missing entry is fine; other failures are ignored because
  // a later store() replaces the file anyway.
  void remove(uint64_t key) const;

 private:
  std::string dir_;
};

}  // namespace radix
