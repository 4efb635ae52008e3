// BlockPool: the CPU backend's cache of freed device (host) memory blocks,
// by exact size. Executables allocate their outputs on every call; a decode
// loop frees and reallocates the same sizes every step. Reusing the freed
// block skips the allocator and, for large blocks, the page faults of fresh
// memory from the kernel (a 64 MiB output is 16K faults): calls run on warm
// pages without the caller tuning malloc.
//
// Thread-safe. Blocks are 64-byte aligned (std::aligned_alloc); blocks of 2
// MiB and more are 2 MiB aligned with transparent huge pages requested
// (madvise) over their whole 2 MiB pages. The pool holds at most
// `limit_bytes` of free blocks and frees the rest.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace radix {

class BlockPool {
 public:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

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

 private:
  static size_t rounded(size_t bytes) { return (bytes == 0 ? 1 : bytes + 63) / 64 * 64; }

  const size_t limit_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // by rounded size
  size_t cached_ = 0, reuses_ = 0;
};

}  // namespace radix
