#include "radix/backends/cpu/jit_heap.h"

#include <cstdint>
#include <cstdlib>

#include "radix/backends/cpu/block_pool.h"
#include "radix/backends/cpu/initial_exec_tls.h"

namespace radix {

namespace {

// Each block starts with a 64-byte header holding its size, so free() can
// tell a pooled block from a small one and give it back at its size; the
// caller's pointer, just after the header, keeps the 64-byte alignment.
constexpr size_t kHeader = 64;

// A block: the header and `bytes`, in whole 64-byte lines (aligned_alloc
// wants a multiple of the alignment; the pool keys blocks by this size).
size_t block_bytes(size_t bytes) { return (bytes + kHeader + 63) / 64 * 64; }

BlockPool& pool() {
  // Never destroyed: compiled code may free during static destruction.
  static BlockPool* p = new BlockPool(kJitHeapCacheBytes);
  return *p;
}

// Small blocks: a few freed blocks per size (in 64-byte lines) kept by each
// thread, lock-free. A stories110M decode step allocates and frees ~540
// small temporaries (the chunked attention's per-chunk buffers among them)
// of the same sizes every token; glibc's aligned_alloc splits and coalesces
// chunks for each (~3% of a decode step in _int_memalign and friends). A
// block freed on another thread than the one that allocated it joins the
// freeing thread's cache: they are all the C library's aligned blocks.
class SmallCache {
 public:
  static constexpr size_t kClasses = kLargeBlockBytes / 64 + 2, kPerClass = 8;
  ~SmallCache() {
    for (auto& c : bins_)
      for (size_t i = 0; i < c.n; ++i) std::free(c.blocks[i]);
  }
  void* take(size_t total) {
    Bin& b = bins_[total / 64];
    if (b.n == 0) return nullptr;
    ++hits_;
    return b.blocks[--b.n];
  }
  bool put(void* base, size_t total) {
    Bin& b = bins_[total / 64];
    if (b.n == kPerClass) return false;
    b.blocks[b.n++] = base;
    return true;
  }
  size_t hits() const { return hits_; }

 private:
  struct Bin {
    void* blocks[kPerClass];
    size_t n = 0;
  };
  Bin bins_[kClasses];
  size_t hits_ = 0;
};

// The calling thread's cache; nullptr once the thread's destructors ran
// (compiled code may still free then: such blocks go to the C library).
// Initial-exec TLS (initial_exec_tls.h): no __tls_get_addr call per malloc / free.
thread_local SmallCache* tl_cache RADIX_TLS_IE = nullptr;
thread_local bool tl_cache_gone RADIX_TLS_IE = false;
struct SmallCacheOwner {
  ~SmallCacheOwner() {
    delete tl_cache;
    tl_cache = nullptr;
    tl_cache_gone = true;
  }
};
thread_local SmallCacheOwner tl_cache_owner RADIX_TLS_IE;

SmallCache* small_cache() {
  if (!tl_cache && !tl_cache_gone) {
    (void)&tl_cache_owner;  // constructed on first use: frees the cache at thread exit
    tl_cache = new SmallCache;
  }
  return tl_cache;
}

}  // namespace

extern "C" void* jit_heap_malloc(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * kHeader) return nullptr;
  const size_t total = block_bytes(bytes);
  void* base;
  if (bytes >= kLargeBlockBytes) {
    base = pool().allocate(total);
  } else {
    SmallCache* c = small_cache();
    base = c ? c->take(total) : nullptr;
    if (!base) base = std::aligned_alloc(64, total);
  }
  if (!base) return nullptr;
  *static_cast<size_t*>(base) = bytes;
  return static_cast<char*>(base) + kHeader;
}

extern "C" void jit_heap_free(void* p) {
  if (!p) return;
  void* base = static_cast<char*>(p) - kHeader;
  const size_t bytes = *static_cast<size_t*>(base);
  if (bytes >= kLargeBlockBytes) return pool().release(base, block_bytes(bytes));
  SmallCache* c = small_cache();
  if (!c || !c->put(base, block_bytes(bytes))) std::free(base);
}

size_t jit_heap_reuses() { return pool().reuses(); }
size_t jit_heap_small_reuses() {
  SmallCache* c = small_cache();
  return c ? c->hits() : 0;
}

}  // namespace radix
