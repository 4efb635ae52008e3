// The README's first program, verbatim in the test body, so the front-page
// example keeps compiling and computing what it says.
#include <gtest/gtest.h>

#include "test_util.h"

using namespace radix;

namespace {

// ---- from README.md ----
// A layer is a struct templated on its leaf: Linear<Tensor> is traced,
// Linear<Buffer> holds the weights. visit() lists the fields once.
template <class T> struct Linear {
  T w;  // f32[d=in, o=out]
  T b;  // f32[o=out]
  template <class V> void visit(V&& v) { v("w", w); v("b", b); }
  Tensor forward(Tensor x) const { return relu(dot(x, w, "d") + b); }  // [b, d] -> [b, o]
};
// ---- end ----

TEST(Readme, FirstProgram) {
  std::vector<float> w_host = radix::testing::random_vec<float>(64 * 32, -1, 1, 1);
  std::vector<float> b_host = radix::testing::random_vec<float>(32, -1, 1, 2);
  std::vector<float> x_host = radix::testing::random_vec<float>(8 * 64, -1, 1, 3);
  Buffer x_buffer = *Platform::cpu().buffer(Shape(DType::kF32, {8, 64}, {"b", "d"}), x_host);

  // ---- from README.md ----
  Platform cpu = Platform::cpu();
  Linear<Buffer> weights{*cpu.buffer(Shape(DType::kF32, {64, 32}, {"d", "o"}), w_host),
                         *cpu.buffer(Shape(DType::kF32, {32}, {"o"}), b_host)};
  auto exe = compile_model(cpu, tensors_like(weights), &Linear<Tensor>::forward,
                           Shape(DType::kF32, {8, 64}, {"b", "d"}));       // Result<Exe<...>>
  auto ready = exe->prepare(std::move(weights));  // bind the weights once
  Result<Buffer> y = ready->call(x_buffer);       // call many times
  std::vector<float> out = *y->to_host<float>();
  // ---- end ----

  std::vector<float> want(8 * 32);
  for (int r = 0; r < 8; ++r)
    for (int o = 0; o < 32; ++o) {
      double acc = b_host[o];
      for (int i = 0; i < 64; ++i) acc += double(x_host[r * 64 + i]) * w_host[i * 32 + o];
      want[r * 32 + o] = static_cast<float>(std::max(acc, 0.0));
    }
  // f32 sums of 64 products of values in [-1, 1].
  EXPECT_TRUE(radix::testing::all_close(out, want, 1e-5, 1e-5));
  EXPECT_EQ(y->shape().to_string(), "f32[b=8,o=32]");
}

}  // namespace

namespace radix {
namespace {

// The README's donation snippet, verbatim between the markers.
TEST(Readme, DonationSnippet) {
  Platform cpu = Platform::cpu();
  Buffer cache = *cpu.buffer(Shape(DType::kF32, {4, 4096, 8, 64}),
                             std::vector<float>(size_t{4} * 4096 * 8 * 64, 0.5f));
  Buffer tok = *cpu.buffer(Shape(DType::kF32, {4, 1, 8, 64}), std::vector<float>(size_t{4} * 8 * 64, 2.f));
  Buffer pos = *cpu.scalar<int32_t>(100);
  void* memory = cache.device_ptr();
  // ---- from README.md ----
  auto step = compile_fn(cpu, [](Tensor cache, Tensor tok, Tensor pos) {
    return dynamic_update_slice(cache, tok, {{1, pos}}).reuse_buffer(cache);
  }, Shape(DType::kF32, {4, 4096, 8, 64}), Shape(DType::kF32, {4, 1, 8, 64}), Shape(DType::kI32));
  cache = *step->call(std::move(cache), tok, pos);   // same memory, ~1.6 us at any cache size
  // ---- end ----
  EXPECT_EQ(cache.device_ptr(), memory);
  std::vector<float> got = *cache.to_host<float>();
  for (size_t l = 0; l < 4; ++l)
    for (size_t s : {size_t{99}, size_t{100}, size_t{101}})
      EXPECT_EQ(got[(l * 4096 + s) * 512], s == 100 ? 2.f : 0.5f) << l << " " << s;
}

}  // namespace
}  // namespace radix
