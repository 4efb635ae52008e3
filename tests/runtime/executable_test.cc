// Runtime errors: wrong buffers at call time, bad host transfers and invalid
// options come back as Status values naming what was wrong.
#include <gtest/gtest.h>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

Shape f32(std::initializer_list<int64_t> dims) { return Shape(DType::kF32, dims); }

auto add_exe() {
  return must(compile_fn(cpu(), [](Tensor a, Tensor b) { return a + b; }, f32({2, 3}), f32({2, 3})));
}

void expect_invalid(const Status& s, std::initializer_list<const char*> needles) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  for (const char* n : needles)
    EXPECT_NE(s.message().find(n), std::string::npos) << "missing '" << n << "' in: " << s.message();
}

TEST(Executable, CallsWithRightBuffers) {
  auto exe = add_exe();
  std::vector<float> a{1, 2, 3, 4, 5, 6}, b{10, 20, 30, 40, 50, 60};
  Buffer ba = must(cpu().buffer(f32({2, 3}), a)), bb = must(cpu().buffer(f32({2, 3}), b));
  Buffer out = must(exe.call(ba, bb));
  std::vector<float> got = must(out.to_host<float>());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(got[i], a[i] + b[i]);
  // Buffers are reusable across calls; inputs are never written.
  Buffer out2 = must(exe.call(out, bb));
  EXPECT_EQ(must(out2.to_host<float>())[5], 66 + 60);
  EXPECT_EQ(must(ba.to_host<float>()), a);
}

TEST(Executable, WrongCountShapeDtypeAreErrors) {
  auto exe = add_exe();
  Buffer good = must(cpu().buffer(f32({2, 3}), std::vector<float>(6, 1.f)));
  Buffer wrong_dims = must(cpu().buffer(f32({3, 2}), std::vector<float>(6, 1.f)));
  Buffer wrong_dtype = must(cpu().buffer(Shape(DType::kI32, {2, 3}), std::vector<int32_t>(6, 1)));

  expect_invalid(exe.call(good, wrong_dims).status(), {"argument 1", "expected f32[2,3]", "got f32[3,2]"});
  expect_invalid(exe.call(wrong_dtype, good).status(), {"argument 0", "expected f32[2,3]", "got i32[2,3]"});
  const Buffer* one[] = {&good};
  expect_invalid(exe.executable().call(std::span<const Buffer* const>(one)).status(), {"takes 2 buffers, got 1"});
  Buffer moved = std::move(good);
  expect_invalid(exe.call(good, moved).status(), {"argument 0", "empty Buffer"});
}

// Regression: tags were ignored, so a transposed [o, d] weight passed for a
// [d, o] parameter of equal sizes and silently computed with the wrong axes.
TEST(Executable, BufferTagsMustMatchTaggedParameters) {
  const Shape w_do(DType::kF32, {4, 4}, {"d", "o"}), x_bd(DType::kF32, {2, 4}, {"b", "d"});
  auto exe = must(compile_fn(cpu(), [](Tensor x, Tensor w) { return dot(x, w, "d"); }, x_bd, w_do));
  std::vector<float> x(8, 1.f), w(16, 1.f);
  Buffer bx = must(cpu().buffer(x_bd, x));
  Buffer w_od = must(cpu().buffer(Shape(DType::kF32, {4, 4}, {"o", "d"}), w));
  expect_invalid(exe.call(bx, w_od).status(),
                 {"argument 1", "expected f32[d=4,o=4]", "got f32[o=4,d=4]", "axis 0 is tagged 'o'"});
  // Untagged buffers (and untagged axes) are accepted as they are.
  Buffer w_plain = must(cpu().buffer(Shape(DType::kF32, {4, 4}), w));
  Buffer w_half = must(cpu().buffer(Shape(DType::kF32, {4, 4}, {Tag(), "o"}), w));
  EXPECT_TRUE(exe.call(bx, w_plain).ok());
  EXPECT_TRUE(exe.call(bx, w_half).ok());
  EXPECT_TRUE(exe.call(bx, must(cpu().buffer(w_do, w))).ok());
}

// Regression: `*result` on a temporary Result returned T&&, so a range-for
// over `*buf.to_host<T>()` iterated a vector destroyed before the loop ran.
TEST(Result, RvalueAccessReturnsByValue) {
  static_assert(std::is_same_v<decltype(*std::declval<Result<std::vector<float>>>()), std::vector<float>>);
  static_assert(std::is_same_v<decltype(std::declval<Result<std::vector<float>>>().value()), std::vector<float>>);
  static_assert(std::is_same_v<decltype(*std::declval<Result<std::vector<float>>&>()), std::vector<float>&>);
  Buffer b = must(cpu().buffer(f32({5}), std::vector<float>{1, 2, 3, 4, 5}));
  float sum = 0;
  for (float v : *b.to_host<float>()) sum += v;
  EXPECT_EQ(sum, 15.f);
  auto exe = add_exe();
  Buffer a = must(cpu().buffer(f32({2, 3}), std::vector<float>(6, 2.f)));
  std::vector<float> got;
  for (float v : *exe.call(a, a)->to_host<float>()) got.push_back(v);
  EXPECT_EQ(got, std::vector<float>(6, 4.f));
}

TEST(Buffer, HostTransferErrors) {
  expect_invalid(cpu().buffer(f32({2, 3}), std::vector<float>(5)).status(), {"f32[2,3]", "needs 6 elements, got 5"});
  expect_invalid(cpu().buffer(f32({2}), std::vector<double>(2)).status(), {"f32[2]", "f64"});
  Buffer b = must(cpu().buffer(f32({2}), std::vector<float>{1, 2}));
  expect_invalid(b.to_host<int32_t>().status(), {"f32[2]", "i32"});
  std::vector<std::byte> small(4);
  expect_invalid(b.copy_to_host(small), {"needs 8 bytes, got 4"});
}

// A valid shape too large for memory is an error, not a crash.
TEST(Buffer, AllocationTooLargeIsAnError) {
  auto b = Buffer::allocate(cpu().backend(), Shape(DType::kU8, {int64_t{1} << 62}));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("out of memory"), std::string::npos) << b.status().to_string();
}

TEST(Buffer, FromSpansArraysAndLists) {
  std::array<int16_t, 3> arr{1, -2, 3};
  std::vector<int16_t> vec{4, 5, 6};
  Shape s(DType::kI16, {3});
  EXPECT_EQ(must(must(cpu().buffer(s, arr)).to_host<int16_t>()), (std::vector<int16_t>{1, -2, 3}));
  EXPECT_EQ(must(must(cpu().buffer(s, std::span<const int16_t>(vec))).to_host<int16_t>()), vec);
  EXPECT_EQ(must(must(cpu().buffer<int16_t>(s, {7, 8, 9})).to_host<int16_t>()), (std::vector<int16_t>{7, 8, 9}));
  Buffer empty = must(cpu().buffer(Shape(DType::kF32, {0, 3}), std::vector<float>{}));
  EXPECT_EQ(empty.byte_size(), 0u);
  EXPECT_TRUE(must(empty.to_host<float>()).empty());
}

TEST(Executable, RankZeroAndZeroSizedTensors) {
  auto exe = must(compile_fn(cpu(), [](Tensor s, Tensor e) { return std::make_tuple(s * s + 1.0, e * 2.0); },
                             Shape(DType::kF64), Shape(DType::kF32, {0, 16})));
  Buffer s = must(cpu().scalar(3.0));
  Buffer e = must(cpu().buffer(Shape(DType::kF32, {0, 16}), std::vector<float>{}));
  auto [sq, ee] = must(exe.call(s, e));
  EXPECT_EQ(sq.shape(), Shape(DType::kF64));
  EXPECT_EQ(must(sq.to_host<double>()), std::vector<double>{10.0});
  EXPECT_EQ(ee.shape(), Shape(DType::kF32, {0, 16}));
  EXPECT_TRUE(must(ee.to_host<float>()).empty());
}

TEST(Buffer, MoveOnlyOwnership) {
  Buffer a = must(cpu().buffer(f32({3}), std::vector<float>{1, 2, 3}));
  void* p = a.device_ptr();
  Buffer b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.device_ptr(), p);
  EXPECT_EQ(must(b.to_host<float>()), (std::vector<float>{1, 2, 3}));
  Buffer s = must(cpu().scalar(2.5));
  EXPECT_EQ(s.shape(), Shape(DType::kF64));
  EXPECT_EQ(must(s.to_host<double>())[0], 2.5);
}

TEST(Buffer, BoolAndHalfUseRawHostTypes) {
  Buffer b = must(cpu().buffer(Shape(DType::kBool, {3}), std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(must(b.to_host<uint8_t>()), (std::vector<uint8_t>{1, 0, 1}));
  Buffer h = must(cpu().buffer(Shape(DType::kF16, {1}), std::vector<uint16_t>{float_to_f16(1.5f)}));
  EXPECT_EQ(f16_to_float(must(h.to_host<uint16_t>())[0]), 1.5f);
}

TEST(CompileOptions, InvalidOptionsAreErrors) {
  CompileFnOptions o;
  o.compile.diagnostics.dump = {"bogus-stage"};
  auto exe = compile_fn(cpu(), o, [](Tensor a) { return a; }, f32({2}));
  expect_invalid(exe.status(), {"unknown stage 'bogus-stage'"});
  CompileFnOptions o2;
  o2.compile.codegen.opt_level = 7;
  expect_invalid(compile_fn(cpu(), o2, [](Tensor a) { return a; }, f32({2})).status(), {"opt_level", "7"});
}

TEST(Executable, IdentityAndConstantResults) {
  // A result that is an argument itself, and one that depends on no argument.
  auto exe = must(compile_fn(cpu(), [](Tensor a) { return std::make_tuple(a, full(Shape(DType::kI32, {2}), 7)); },
                             f32({4})));
  Buffer in = must(cpu().buffer(f32({4}), std::vector<float>{1, 2, 3, 4}));
  auto [same, sevens] = must(exe.call(in));
  EXPECT_EQ(must(same.to_host<float>()), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(must(sevens.to_host<int32_t>()), (std::vector<int32_t>{7, 7}));
  EXPECT_NE(same.device_ptr(), in.device_ptr());
}

}  // namespace
}  // namespace radix
