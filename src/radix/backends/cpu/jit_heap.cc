#include "radix/backends/cpu/jit_heap.h"

#include <cstdint>
#include <cstdlib>

#include "radix/backends/cpu/block_pool.h"

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

}  // namespace

extern "C" void* jit_heap_malloc(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * kHeader) return nullptr;
  const size_t total = block_bytes(bytes);
  void* base = bytes >= kLargeBlockBytes ? pool().allocate(total) : std::aligned_alloc(64, total);
  if (!base) return nullptr;
  *static_cast<size_t*>(base) = bytes;
  return static_cast<char*>(base) + kHeader;
}

extern "C" void jit_heap_free(void* p) {
  if (!p) return;
  void* base = static_cast<char*>(p) - kHeader;
  const size_t bytes = *static_cast<size_t*>(base);
  if (bytes >= kLargeBlockBytes) return pool().release(base, block_bytes(bytes));
  std::free(base);
}

size_t jit_heap_reuses() { return pool().reuses(); }

}  // namespace radix
