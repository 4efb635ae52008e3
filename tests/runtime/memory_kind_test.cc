// Output memory kinds (Tensor::to_memory, the seeds' mhlo.memory_kind): a
// result asked for in pinned host memory is allocated there, the others in
// device memory; both hold the right values on the CPU.
#include <gtest/gtest.h>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

TEST(MemoryKind, ResultsAreAllocatedWhereTheyAskedToBe) {
  Shape s(DType::kF32, {3, 5000});  // > one page, so pinning covers several
  auto fn = [](Tensor x) {
    return std::tuple<Tensor, Tensor>{(x * 2.0).to_memory(MemoryKind::kPinnedHost), x + 1.0};
  };
  CompileFnOptions o;
  auto exe = must(compile_fn(cpu(), o, fn, s));
  const Signature& sig = exe.executable().signature();
  ASSERT_EQ(sig.output_memory_kinds.size(), 2u);
  EXPECT_EQ(sig.output_memory_kinds[0], MemoryKind::kPinnedHost);
  EXPECT_EQ(sig.output_memory_kinds[1], MemoryKind::kDevice);
  std::vector<float> xv = testing::random_vec<float>(15000, -4, 4, 9);
  Buffer x = must(cpu().buffer(s, xv));
  for (int rep = 0; rep < 3; ++rep) {  // allocate and free pinned memory more than once
    auto [pinned, device] = must(exe.call(x));
    EXPECT_EQ(pinned.memory_kind(), MemoryKind::kPinnedHost);
    EXPECT_EQ(device.memory_kind(), MemoryKind::kDevice);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pinned.device_ptr()) % 4096, 0u) << "pinned memory is page-aligned";
    std::vector<float> p = must(pinned.to_host<float>()), d = must(device.to_host<float>());
    for (size_t i = 0; i < xv.size(); ++i) {
      ASSERT_EQ(p[i], xv[i] * 2.f);
      ASSERT_EQ(d[i], xv[i] + 1.f);
    }
  }
}

TEST(MemoryKind, PinnedHostBuffersCanBeAllocatedDirectly) {
  Shape s(DType::kI32, {10});
  Buffer b = must(Buffer::allocate(cpu().backend(), s, MemoryKind::kPinnedHost));
  EXPECT_EQ(b.memory_kind(), MemoryKind::kPinnedHost);
  EXPECT_EQ(memory_kind_name(b.memory_kind()), "pinned_host");
  Buffer d = must(cpu().buffer(s, std::vector<int32_t>(10, 7)));
  EXPECT_EQ(d.memory_kind(), MemoryKind::kDevice);
}

}  // namespace
}  // namespace radix
