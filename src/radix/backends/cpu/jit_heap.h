// JitHeap: the heap behind the compiled code's own temporaries. MLIR lowers
// every heap memref.alloc / dealloc to calls of `malloc` / `free`; the CPU
// backend links those two names in each loaded object to jit_heap_malloc /
// jit_heap_free instead of the C library's.
//
// Why: a compiled call's large temporaries (a prompt's packed weight panels,
// attention scores, MLP activations) are allocated and freed on every call.
// glibc serves blocks above its mmap threshold with fresh mmaps and returns
// them to the kernel on free, so each call page-faults all of its
// temporaries in again (stories110M prefill of 128 tokens: 380-405 ms, of
// which ~1/3 in page faults, against 265 ms with warm memory). Here, blocks
// of at least kLargeBlockBytes come from a BlockPool by exact size (a
// program's temporaries have the same sizes on every call), so a repeated
// call runs on warm pages; smaller blocks come from the C library, with a
// few freed ones per size kept by each thread for the next allocation.
//
// Blocks are 64-byte aligned. Thread-safe (a parallel loop's iterations may
// allocate). The pool keeps at most kJitHeapCacheBytes of freed blocks for
// the whole process; beyond that, freed blocks go back to the C library.
#pragma once

#include <cstddef>

namespace radix {

constexpr size_t kLargeBlockBytes = size_t{64} << 10;
constexpr size_t kJitHeapCacheBytes = size_t{1} << 30;

// malloc / free for compiled code (the C library's contract: nullptr when
// out of memory, free(nullptr) a no-op; a block freed only by jit_heap_free).
extern "C" void* jit_heap_malloc(size_t bytes);
extern "C" void jit_heap_free(void* p);

// How many allocations freed large blocks have served (for tests).
size_t jit_heap_reuses();
// How many of the calling thread's small allocations its cache served.
size_t jit_heap_small_reuses();

}  // namespace radix
