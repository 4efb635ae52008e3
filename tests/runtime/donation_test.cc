// Donation at run time (Tensor::reuse_buffer): a Buffer moved into a call for
// a donated parameter becomes the result, written in place; a lent one is
// copied first; a moved-from Buffer is refused with a clear error.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace radix {
namespace {

namespace fs = std::filesystem;
using testing::cpu;
using testing::must;

TEST(Donation, MovedInBufferBecomesTheResultInPlace) {
  Shape s(DType::kF32, {1000});
  auto exe = must(compile_fn(cpu(), [](Tensor x, Tensor b) { return (x * 2.0 + b).reuse_buffer(x); }, s, s));
  std::vector<float> xv = testing::random_vec<float>(1000, -1, 1, 1), bv = testing::random_vec<float>(1000, -1, 1, 2);
  Buffer x = must(cpu().buffer(s, xv)), b = must(cpu().buffer(s, bv));
  void* x_mem = x.device_ptr();
  Buffer y = must(exe.call(std::move(x), b));
  EXPECT_EQ(y.device_ptr(), x_mem) << "the result must live in the donated buffer";
  EXPECT_FALSE(x.valid()) << "a donated buffer is consumed";  // NOLINT(bugprone-use-after-move): the point
  std::vector<float> got = must(y.to_host<float>());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], xv[i] * 2.f + bv[i]) << i;  // one rounding each side

  // Using the moved-from buffer again is an error that says so.
  auto again = exe.call(x, b);  // NOLINT(bugprone-use-after-move)
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(again.status().message().find("moved from"), std::string::npos) << again.status().message();
  EXPECT_NE(again.status().message().find("argument 0 (arg0)"), std::string::npos) << again.status().message();
}

TEST(Donation, LentBufferForADonatedParameterIsLeftUntouched) {
  Shape s(DType::kF32, {64});
  auto exe = must(compile_fn(cpu(), [](Tensor x, Tensor b) { return (x + b).reuse_buffer(x); }, s, s));
  std::vector<float> xv = testing::random_vec<float>(64, -1, 1, 3), bv(64, 1.f);
  Buffer x = must(cpu().buffer(s, xv)), b = must(cpu().buffer(s, bv));
  Buffer y = must(exe.call(x, b));
  EXPECT_NE(y.device_ptr(), x.device_ptr());
  EXPECT_EQ(must(x.to_host<float>()), xv) << "a lent buffer is never written";
  std::vector<float> got = must(y.to_host<float>());
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(got[i], xv[i] + 1.f);
}

TEST(Donation, ABufferMovedInAndAlsoLentIsRefused) {
  Shape s(DType::kF32, {8});
  auto exe = must(compile_fn(cpu(), [](Tensor x, Tensor b) { return (x + b).reuse_buffer(x); }, s, s));
  Buffer x = must(cpu().buffer(s, std::vector<float>(8, 1.f)));
  Buffer* px = &x;
  auto r = exe.executable().call({std::move(*px), x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("moved into the call and also passed as argument 1"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(x.valid()) << "a refused call consumes nothing";
}

// The KV-cache step: one token's [layers, 1, heads, dim] slice written into
// a donated [layers, seq, heads, dim] cache. In place: same memory every
// step, and the bufferized program allocates and copies nothing of the
// cache's size (so its time does not grow with the cache; bench/donation_bench
// measures it).
TEST(Donation, KvCacheUpdateRunsInPlace) {
  constexpr int64_t L = 2, S = 512, H = 4, D = 16;
  Shape cache_s(DType::kF32, {L, S, H, D}), upd_s(DType::kF32, {1, 1, H, D}), idx(DType::kI32);
  const fs::path dump = fs::temp_directory_path() / ("radix-donation-" + std::to_string(::getpid()));
  fs::remove_all(dump);
  CompileFnOptions o;
  o.compile.diagnostics.dump = {"bufferize"};
  o.compile.diagnostics.dump_dir = dump.string();
  auto step = [](Tensor cache, Tensor upd, Tensor layer, Tensor pos) {
    return dynamic_update_slice(cache, upd, {{0, layer}, {1, pos}}).reuse_buffer(cache);
  };
  auto exe = must(compile_fn(cpu(), o, step, cache_s, upd_s, idx, idx));
  const std::string ir = testing::all_stage_dumps(dump);
  fs::remove_all(dump);
  ASSERT_NE(ir.find("func.func @main"), std::string::npos);
  EXPECT_EQ(ir.find("memref.alloc"), std::string::npos) << ir;
  // The one copy writes the update into a subview of the cache; nothing
  // copies into the whole cache.
  EXPECT_NE(ir.find("memref.subview %arg0"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("to memref<2x512x4x16xf32>\n"), std::string::npos) << ir;

  std::vector<float> ref(static_cast<size_t>(L * S * H * D));
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<float>(i % 97);
  Buffer cache = must(cpu().buffer(cache_s, ref));
  void* mem = cache.device_ptr();
  const int32_t steps[][2] = {{0, 0}, {1, 7}, {0, 511}, {1, 300}};
  for (auto [layer, pos] : steps) {
    std::vector<float> u = testing::random_vec<float>(static_cast<size_t>(H * D), -1, 1, pos + 10 * layer);
    cache = must(exe.call(std::move(cache), must(cpu().buffer(upd_s, u)), must(cpu().scalar(layer)),
                          must(cpu().scalar(pos))));
    ASSERT_EQ(cache.device_ptr(), mem) << "step " << layer << "," << pos;
    for (int64_t j = 0; j < H * D; ++j) ref[static_cast<size_t>((layer * S + pos) * H * D + j)] = u[j];
  }
  EXPECT_EQ(must(cache.to_host<float>()), ref);
}

}  // namespace
}  // namespace radix
