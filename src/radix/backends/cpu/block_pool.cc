#include "radix/backends/cpu/block_pool.h"

#include <cstdlib>

namespace radix {

BlockPool::~BlockPool() {
  for (auto& [size, blocks] : free_)
    for (void* p : blocks) std::free(p);
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
  }
  return std::aligned_alloc(64, n);
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

}  // namespace radix
