// The compiled code's heap (jit_heap.h): malloc / free semantics (64-byte
// alignment, free(nullptr), small and large blocks), small blocks reused
// from each thread's cache, and a compiled program's
// large temporaries reused from one call to the next (no fresh pages per
// call) with the same results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "radix/backends/cpu/jit_heap.h"
#include "test_util.h"

namespace radix {
namespace {

TEST(JitHeap, MallocAndFreeKeepTheirContract) {
  jit_heap_free(nullptr);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, kLargeBlockBytes - 1, kLargeBlockBytes, size_t{3} << 20}) {
    auto* p = static_cast<unsigned char*>(jit_heap_malloc(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 0xab, bytes);  // the whole block is writable
    jit_heap_free(p);
  }
  EXPECT_EQ(jit_heap_malloc(SIZE_MAX - 8), nullptr);  // too large: nullptr, as malloc
}

TEST(JitHeap, LargeBlocksAreReusedBySize) {
  const size_t before = jit_heap_reuses();
  void* a = jit_heap_malloc(size_t{1} << 20);
  jit_heap_free(a);
  void* b = jit_heap_malloc(size_t{1} << 20);
  EXPECT_EQ(b, a);
  EXPECT_EQ(jit_heap_reuses(), before + 1);
  void* c = jit_heap_malloc(size_t{1} << 21);  // another size: not the same block
  EXPECT_NE(c, b);
  jit_heap_free(b);
  jit_heap_free(c);
}

// Small blocks come back from the calling thread's cache, by size; blocks
// of another size, and blocks beyond a size's few cached ones, do not mix
// with them. A thread that frees another thread's blocks caches them too.
TEST(JitHeap, SmallBlocksAreReusedByEachThread) {
  const size_t before = jit_heap_small_reuses();
  void* a = jit_heap_malloc(300);
  std::memset(a, 1, 300);
  jit_heap_free(a);
  void* b = jit_heap_malloc(300);
  EXPECT_EQ(b, a);
  EXPECT_EQ(jit_heap_small_reuses(), before + 1);
  void* c = jit_heap_malloc(1000);  // another size: a fresh block
  EXPECT_NE(c, b);
  EXPECT_EQ(jit_heap_small_reuses(), before + 1);
  jit_heap_free(b);
  jit_heap_free(c);
  // 64 blocks of one size freed at once: all reusable, none handed out twice.
  std::vector<void*> many;
  for (int i = 0; i < 64; ++i) many.push_back(jit_heap_malloc(512));
  for (void* p : many) jit_heap_free(p);
  std::vector<void*> again;
  for (int i = 0; i < 64; ++i) {
    again.push_back(jit_heap_malloc(512));
    std::memset(again.back(), i, 512);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(again.back()) % 64, 0u);
  }
  std::sort(again.begin(), again.end());
  EXPECT_EQ(std::adjacent_find(again.begin(), again.end()), again.end());
  // Blocks allocated here, freed by a thread that then exits (its cache goes
  // back to the C library).
  std::thread([&] {
    for (void* p : again) jit_heap_free(p);
    void* d = jit_heap_malloc(512);
    EXPECT_EQ(std::count(again.begin(), again.end(), d), 1);
    jit_heap_free(d);
  }).join();
}

TEST(JitHeap, ThreadsAllocateAndFreeConcurrently) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        const size_t n = (i % 2 ? kLargeBlockBytes : 256) + size_t(t) * 64;
        auto* p = static_cast<unsigned char*>(jit_heap_malloc(n));
        ASSERT_NE(p, nullptr);
        p[0] = p[n - 1] = static_cast<unsigned char>(t);
        EXPECT_EQ(p[0], p[n - 1]);
        jit_heap_free(p);
      }
    });
  for (std::thread& t : threads) t.join();
}

// A packed 1024^3 matmul allocates B's packed panels (4 MiB) on every call:
// from the second call on they come back from the heap's pool.
TEST(JitHeap, CompiledTemporariesAreReusedAcrossCalls) {
  const int64_t n = 1024;
  const Shape s(DType::kF32, {n, n});
  std::vector<float> a = testing::random_vec<float>(size_t(n * n), -1, 1, 81);
  std::vector<float> b = testing::random_vec<float>(size_t(n * n), -1, 1, 82);
  auto exe = testing::must(compile_fn(testing::cpu(), [](Tensor x, Tensor y) { return matmul(x, y); }, s, s));
  Buffer ba = testing::must(testing::cpu().buffer(s, a)), bb = testing::must(testing::cpu().buffer(s, b));
  std::vector<float> first = testing::must(testing::must(exe.call(ba, bb)).to_host<float>());
  const size_t reuses = jit_heap_reuses();
  std::vector<float> second = testing::must(testing::must(exe.call(ba, bb)).to_host<float>());
  EXPECT_GT(jit_heap_reuses(), reuses);
  EXPECT_EQ(first, second);
  // Spot checks against a double loop (sums of 1024 products of magnitude <= 1).
  for (int64_t i = 0; i < n; i += 97)
    for (int64_t j = 0; j < n; j += 89) {
      double acc = 0;
      for (int64_t k = 0; k < n; ++k) acc += double(a[size_t(i * n + k)]) * b[size_t(k * n + j)];
      EXPECT_NEAR(second[size_t(i * n + j)], acc, 1e-4) << i << "," << j;
    }
}

}  // namespace
}  // namespace radix
