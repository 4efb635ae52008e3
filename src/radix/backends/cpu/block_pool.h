// BlockPool: the CPU backend's cache of freed device (host) memory blocks,
// by exact size. Executables allocate their outputs on every call; a decode
// loop frees and reallocates the same sizes every step. Reusing the freed
// block skips the allocator and, for large blocks, the page faults of fresh
// memory from the kernel (a 64 MiB output is 16K faults): calls run on warm
// pages without the caller tuning malloc.
//
// Thread-safe. Every block is 64-byte aligned; from kChunkedMinBytes (256
// KiB) up it lies in memory that asks for transparent huge pages (madvise):
// blocks below kChunkedMaxBytes (8 MiB) are cut one after the other from 16
// MiB huge-page chunks (a chunk is freed when none of its blocks is in use),
// larger ones start on a 2 MiB boundary with huge pages over their whole 2
// MiB pages. Smaller blocks come from std::aligned_alloc. The pool holds at
// most `limit_bytes` of free blocks and frees the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace radix {

class BlockPool {
 public:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;
  // Blocks of [kChunkedMinBytes, kChunkedMaxBytes) are cut from chunks.
  static constexpr size_t kChunkedMinBytes = size_t{256} << 10;
  static constexpr size_t kChunkedMaxBytes = size_t{8} << 20;
  static constexpr size_t kChunkBytes = size_t{16} << 20;

  explicit BlockPool(size_t limit_bytes) : limit_(limit_bytes) {}
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // A block of at least `bytes` (rounded up to 64), reused if one is free.
  // nullptr when out of memory.
  void* allocate(size_t bytes);
  // Returns a block from allocate() of the same `bytes`.
  void release(void* p, size_t bytes);

  size_t cached_bytes() const;
  size_t reuses() const;  // allocations served from the pool
  size_t chunks() const;  // huge-page chunks held (in use or not)

 private:
  struct Chunk {
    size_t used = 0;  // bytes cut from its start
    size_t live = 0;  // blocks cut and not given back
  };
  static size_t rounded(size_t bytes) { return (bytes == 0 ? 1 : bytes + 63) / 64 * 64; }
  static bool from_chunks(size_t n) { return n >= kChunkedMinBytes && n < kChunkedMaxBytes; }
  void* carve(size_t n);
  void uncarve(void* p);

  const size_t limit_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // by rounded size
  size_t cached_ = 0, reuses_ = 0;
  std::map<uintptr_t, Chunk> chunks_;  // by base address (kChunkBytes-aligned)
  uintptr_t current_ = 0;              // the chunk blocks are cut from now; 0: none
};

}  // namespace radix
