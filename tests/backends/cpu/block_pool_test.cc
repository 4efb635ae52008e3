// The CPU backend's pool of freed blocks: a freed block of the same size is
// handed out again, other sizes are not mixed in, the cache stays within its
// limit, large blocks ask for huge pages, and an executable's per-call
// output reuses the previous call's freed output.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "radix/backends/cpu/block_pool.h"
#include "test_util.h"

namespace radix {
namespace {

TEST(BlockPool, ReusesSameSizeBlocksWithinItsLimit) {
  BlockPool pool(1 << 20);
  void* a = pool.allocate(1000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  pool.release(a, 1000);
  EXPECT_EQ(pool.cached_bytes(), 1024u);  // rounded to 64
  void* b = pool.allocate(5000);          // another size: a fresh block
  EXPECT_NE(b, a);
  void* c = pool.allocate(1000);  // the freed one
  EXPECT_EQ(c, a);
  EXPECT_EQ(pool.reuses(), 1u);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  pool.release(b, 5000);
  pool.release(c, 1000);
  // Past the limit, blocks are freed, not cached.
  void* big = pool.allocate(2 << 20);
  pool.release(big, 2 << 20);
  EXPECT_LE(pool.cached_bytes(), size_t{1} << 20);
}

// The flags line ("VmFlags: rd wr mr ... hg") of the /proc/self/smaps
// mapping that holds `p`, or "" if none does.
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') inside = lo <= addr && addr < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

// Blocks of 8 MiB and more start on a 2 MiB boundary and are marked for
// huge pages (madvise: the "hg" flag of their mapping); blocks under 256 KiB
// are not.
TEST(BlockPool, LargeBlocksAskForHugePages) {
  BlockPool pool(0);
  const size_t big = (size_t{9} << 20) + 100;  // not a multiple of 2 MiB
  auto* p = static_cast<unsigned char*>(pool.allocate(big));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % BlockPool::kHugePageBytes, 0u);
  p[0] = p[big - 1] = 1;  // every byte is usable
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    pool.release(p, big);
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  const std::string flags = vm_flags_of(p);
  ASSERT_FALSE(flags.empty());
  EXPECT_NE((flags + " ").find(" hg "), std::string::npos) << flags;
  pool.release(p, big);
  auto* small = static_cast<unsigned char*>(pool.allocate(100 << 10));
  ASSERT_NE(small, nullptr);
  EXPECT_EQ((vm_flags_of(small) + " ").find(" hg "), std::string::npos) << vm_flags_of(small);
  pool.release(small, 100 << 10);
}

// Blocks from 256 KiB up to 8 MiB (a 768 x 768 bf16 matrix) are cut from
// 16 MiB huge-page chunks: they do not overlap, sit in huge-page memory, and
// a chunk none of whose blocks is in use is freed (all but the current one).
TEST(BlockPool, MidSizeBlocksShareHugePageChunks) {
  BlockPool pool(0);  // caches nothing: released blocks go back to their chunk
  const size_t n = 768 * 768 * 2;
  const size_t per_chunk = BlockPool::kChunkBytes / n;  // 14
  std::vector<unsigned char*> blocks;
  for (size_t i = 0; i < per_chunk + 1; ++i) {
    auto* p = static_cast<unsigned char*>(pool.allocate(n));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, static_cast<int>(i + 1), n);
    blocks.push_back(p);
  }
  EXPECT_EQ(pool.chunks(), 2u);  // the 15th block started a second chunk
  for (size_t i = 0; i < blocks.size(); ++i) {  // no block overwrote another
    EXPECT_EQ(blocks[i][0], i + 1);
    EXPECT_EQ(blocks[i][n - 1], i + 1);
  }
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    const std::string flags = vm_flags_of(blocks[3]);
    EXPECT_NE((flags + " ").find(" hg "), std::string::npos) << flags;
  }
  // Just below and at 8 MiB: the largest chunked size, then a block of its
  // own on a 2 MiB boundary.
  const size_t most = BlockPool::kChunkedMaxBytes - 64;
  auto* below = static_cast<unsigned char*>(pool.allocate(most));
  auto* whole = static_cast<unsigned char*>(pool.allocate(BlockPool::kChunkedMaxBytes));
  ASSERT_NE(below, nullptr);
  ASSERT_NE(whole, nullptr);
  below[0] = below[most - 1] = whole[0] = 1;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(whole) % BlockPool::kHugePageBytes, 0u);
  EXPECT_EQ(pool.chunks(), 2u);  // the second chunk had room for it
  pool.release(whole, BlockPool::kChunkedMaxBytes);
  pool.release(below, most);
  for (size_t i = 0; i + 1 < blocks.size(); ++i) pool.release(blocks[i], n);
  EXPECT_EQ(pool.chunks(), 1u);  // the first chunk is empty: freed
  pool.release(blocks.back(), n);
  EXPECT_EQ(pool.chunks(), 1u);  // the current one is kept, cut from its start again
  void* again = pool.allocate(n);
  EXPECT_EQ(again, blocks.back());
  pool.release(again, n);
}

TEST(BlockPool, ManyThreads) {
  BlockPool pool(64 << 20);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const size_t n = 64 * static_cast<size_t>(1 + (i + t) % 7);
        auto* p = static_cast<unsigned char*>(pool.allocate(n));
        p[0] = p[n - 1] = static_cast<unsigned char>(t);  // the block is usable
        pool.release(p, n);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_GT(pool.reuses(), 0u);
  EXPECT_LE(pool.cached_bytes(), size_t{64} << 20);
}

TEST(BlockPool, ExecutableOutputsReuseFreedOutputs) {
  Shape s(DType::kF32, {512, 512});
  auto exe = testing::must(compile_fn(testing::cpu(), [](Tensor a) { return a * 2.0; }, s));
  Buffer x = testing::must(testing::cpu().buffer(s, std::vector<float>(512 * 512, 1.5f)));
  const void* first = nullptr;
  {
    Buffer y = testing::must(exe.call(x));
    first = y.device_ptr();
    EXPECT_EQ(testing::must(y.to_host<float>())[7], 3.0f);
  }  // freed into the pool
  Buffer z = testing::must(exe.call(x));
  EXPECT_EQ(z.device_ptr(), first);
  EXPECT_EQ(testing::must(z.to_host<float>())[100], 3.0f);
}

}  // namespace
}  // namespace radix
