#include "radix/backends/cpu/block_pool.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace radix {

BlockPool::~BlockPool() {
  for (auto& [size, blocks] : free_)
    if (!from_chunks(size))
      for (void* p : blocks) std::free(p);
  for (auto& [base, chunk] : chunks_) std::free(reinterpret_cast<void*>(base));
}

void* BlockPool::allocate(size_t bytes) {
  const size_t n = rounded(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(n);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_ -= n;
      ++reuses_;
      return p;
    }
    if (from_chunks(n)) return carve(n);
  }
  if (n < kChunkedMinBytes) return std::aligned_alloc(64, n);
  // Large blocks (weights, big activations) start on a 2 MiB boundary and
  // ask for transparent huge pages (hosts set to "madvise" give them only
  // so): a decode step streams every weight matrix, and with 4 KiB pages
  // each page costs a TLB miss. Measured on Zen 5, one process alternating
  // two generators: stories15M f32 decode 364 -> 394 tok/s on one core, 513
  // -> 541 on two; stories110M bf16 94 -> 99, f32 55 -> 58 (Q4_0 unchanged).
  void* p = nullptr;
  if (::posix_memalign(&p, kHugePageBytes, n) != 0) return nullptr;
  (void)::madvise(p, n / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  return p;
}

// Mid-size blocks (a 768 x 768 bf16 matrix is 1.1 MiB, a 2048 x 768 one 3
// MiB) are cut, one after the other, from huge-page chunks: on their own,
// a block under 2 MiB got no huge page and a larger one none over its last,
// partial 2 MiB. Measured on Zen 5, one core, decode tok/s, the same process
// alternating the two pools: stories110M bf16 111 -> 120 with the blocks
// under 2 MiB in chunks (its 1.1 MiB matrices had streamed at 23-25 GB/s
// where the 3 MiB ones reached 30), 120 -> 128 with those under 8 MiB;
// stories15M f32 (0.3-0.9 MiB matrices) 500 -> 619; stories110M Q4_0 340 ->
// 383; stories110M f32 (2.3-6 MiB) 65.9 -> 67.8. Called with mu_ held.
void* BlockPool::carve(size_t n) {
  if (current_ == 0 || chunks_[current_].used + n > kChunkBytes) {
    void* base = nullptr;
    if (::posix_memalign(&base, kChunkBytes, kChunkBytes) != 0) return nullptr;
    (void)::madvise(base, kChunkBytes, MADV_HUGEPAGE);
    current_ = reinterpret_cast<uintptr_t>(base);
    chunks_[current_] = Chunk{};
  }
  Chunk& c = chunks_[current_];
  void* p = reinterpret_cast<void*>(current_ + c.used);
  c.used += n;
  ++c.live;
  return p;
}

// A block cut from a chunk goes back to it; the chunk is freed when none of
// its blocks is live (the current one is reused from its start instead).
// Called with mu_ held.
void BlockPool::uncarve(void* p) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{kChunkBytes} - 1);
  auto it = chunks_.find(base);
  if (it == chunks_.end() || --it->second.live > 0) return;
  if (base == current_) {
    it->second.used = 0;
    return;
  }
  std::free(reinterpret_cast<void*>(base));
  chunks_.erase(it);
}

void BlockPool::release(void* p, size_t bytes) {
  if (!p) return;
  const size_t n = rounded(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + n <= limit_) {
      free_[n].push_back(p);
      cached_ += n;
      return;
    }
    if (from_chunks(n)) return uncarve(p);
  }
  std::free(p);
}

size_t BlockPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

size_t BlockPool::reuses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reuses_;
}

size_t BlockPool::chunks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chunks_.size();
}

}  // namespace radix
