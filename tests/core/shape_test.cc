#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <unordered_set>

#include "radix/core/dtype.h"
#include "radix/core/half.h"
#include "radix/core/shape.h"

namespace radix {
namespace {

TEST(DType, NamesRoundTripAndSizes) {
  for (DType d : kAllDTypes) {
    auto back = dtype_from_name(dtype_name(d));
    ASSERT_TRUE(back.has_value()) << dtype_name(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_FALSE(dtype_from_name("f128").has_value());
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kU64), 8u);
  EXPECT_TRUE(is_float(DType::kBF16));
  EXPECT_TRUE(is_unsigned_int(DType::kU16));
  EXPECT_FALSE(is_integer(DType::kBool));
}

TEST(Shape, BasicsAndPrinting) {
  Shape s(DType::kF32, {2, 512}, {"b", "d"});
  EXPECT_EQ(s.rank(), 2);
  EXPECT_EQ(s.count(), 1024);
  EXPECT_EQ(s.byte_size(), 4096u);
  EXPECT_EQ(s.to_string(), "f32[b=2,d=512]");
  EXPECT_EQ(Shape(DType::kI8, {3, 4}).to_string(), "i8[3,4]");
  EXPECT_EQ(Shape(DType::kF64).to_string(), "f64[]");
  EXPECT_EQ(Shape(DType::kF64).count(), 1);
  EXPECT_EQ(s.with_partition(1, "model").to_string(), "f32[b=2,d=512@model]");
  EXPECT_EQ(s.with_partition("d", "model").replicated().to_string(), "f32[b=2,d=512]");
}

TEST(Shape, AxesByIndexTagAndNegativeIndex) {
  Shape s(DType::kF32, {2, 3, 4}, {"b", "s", "d"});
  EXPECT_EQ(s.find_axis("d"), 2);
  EXPECT_EQ(s.find_axis(-1), 2);
  EXPECT_EQ(s.find_axis(0), 0);
  EXPECT_FALSE(s.find_axis("x").has_value());
  EXPECT_FALSE(s.find_axis(3).has_value());
  EXPECT_FALSE(s.find_axis(-4).has_value());
  EXPECT_EQ(s.find_dim("s"), 3);
}

TEST(Shape, EqualityAndHash) {
  Shape a(DType::kF32, {2, 3}, {"b", "d"});
  Shape b(DType::kF32, {2, 3}, {"b", "d"});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a, a.without_tags());
  EXPECT_NE(a, a.with_dtype(DType::kF16));
  EXPECT_NE(a, a.with_dim(1, 4));
  EXPECT_NE(a, a.with_partition(0, "x"));
  EXPECT_NE(a.with_partition(0, "x"), a.with_partition(0, "y"));
  EXPECT_NE(a.with_partition(0, "x").hash(), a.with_partition(0, "y").hash());
  EXPECT_EQ(a.with_partition(0, "x"), b.with_partition("b", "x"));
  EXPECT_TRUE(a.same_dims(a.without_tags()));
  std::unordered_set<Shape> set{a, b, a.without_tags(), a.with_dim(0, 5)};
  EXPECT_EQ(set.size(), 3u);
}

TEST(Shape, ModifiersKeepTagsAndPartitions) {
  Shape s = Shape(DType::kF32, {2, 3, 4}, {"a", "b", "c"}).with_partition(2, "m");
  EXPECT_TRUE(s.partitioned());
  EXPECT_FALSE(s.replicated().partitioned());
  EXPECT_EQ(s.partition(2).name(), "m");
  EXPECT_TRUE(s.partition(0).empty());
  Shape d = s.drop_axis(1);
  EXPECT_EQ(d.to_string(), "f32[a=2,c=4@m]");
  Shape i = d.insert_axis(0, 7, "z");
  EXPECT_EQ(i.to_string(), "f32[z=7,a=2,c=4@m]");
  EXPECT_EQ(i.with_dim(2, 8).to_string(), "f32[z=7,a=2,c=8@m]");
  EXPECT_THROW(s.with_partition("nope", "m"), std::invalid_argument);
  EXPECT_EQ(i.with_tag(0, "y").tag(0).name(), "y");
}

TEST(Shape, InvalidConstructionThrows) {
  EXPECT_THROW(Shape(DType::kF32, {1, 1, 1, 1, 1, 1, 1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(Shape(DType::kF32, {2, -1}), std::invalid_argument);
  EXPECT_THROW(Shape(DType::kF32, {2, 3}, {"a", "a"}), std::invalid_argument);
  EXPECT_THROW(Shape(DType::kF32, {2, 3}).with_tags({"a"}), std::invalid_argument);
  EXPECT_THROW(Shape(DType::kF32, {2}, {"a"}).insert_axis(0, 1, "a"), std::invalid_argument);
  // Rank 8 is allowed.
  EXPECT_EQ(Shape(DType::kF32, {1, 2, 1, 2, 1, 2, 1, 2}).count(), 16);
}

// Regression: Shape(f32, {2^32, 2^32}).count() wrapped to 0, and a zero-byte
// buffer then passed for it. Every way of making a shape checks the sizes.
TEST(Shape, ElementCountAndByteSizeOverflowAreRefused) {
  const int64_t k2_31 = int64_t{1} << 31, k2_32 = int64_t{1} << 32;
  auto throws_naming = [](auto&& make, const std::string& needle) {
    try {
      (void)make();
      ADD_FAILURE() << "no exception; expected one naming " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  throws_naming([&] { return Shape(DType::kF32, {k2_32, k2_32}); }, "f32[4294967296,4294967296] is too large");
  // 2^62 elements fit in int64, 2^64 bytes do not.
  throws_naming([&] { return Shape(DType::kF32, {k2_31, k2_31}); }, "too large");
  EXPECT_EQ(Shape(DType::kU8, {k2_31, k2_31}).byte_size(), size_t{1} << 62);
  // Modifiers that grow the size.
  Shape big(DType::kU8, {k2_31, k2_31});
  throws_naming([&] { return big.with_dtype(DType::kF32); }, "too large");
  throws_naming([&] { return big.with_dim(0, k2_32); }, "too large");
  throws_naming([&] { return big.insert_axis(0, 4); }, "too large");
  throws_naming([&] { return big.with_dim(0, -3); }, "negative dimension");
  // A zero dim does not hide an overflowing product of the others (dropping
  // it would expose the wrapped count).
  throws_naming([&] { return Shape(DType::kF32, {0, k2_32, k2_32}); }, "too large");
  Shape z(DType::kF32, {0, k2_31});
  EXPECT_EQ(z.count(), 0);
  EXPECT_EQ(z.drop_axis(0).count(), k2_31);
  // The largest shapes that fit are exact.
  EXPECT_EQ(Shape(DType::kU8, {INT64_MAX}).count(), INT64_MAX);
  EXPECT_EQ(Shape(DType::kF64, {int64_t{1} << 59}).byte_size(), size_t{1} << 62);
}

TEST(Shape, TagErrorsNameTheShape) {
  try {
    (void)Shape(DType::kF32, {2, 3}, {"x", "x"});
    ADD_FAILURE() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tag 'x' used twice in tags {'x', 'x'} for f32[2,3]"), std::string::npos)
        << e.what();
  }
}

TEST(Tag, InternedComparison) {
  std::string dyn = std::string("ba") + "tch";
  EXPECT_EQ(Tag("batch"), Tag(dyn));
  EXPECT_FALSE(Tag("batch") == Tag("batc"));
  EXPECT_TRUE(Tag().empty());
  EXPECT_TRUE(Tag("").empty());
}

// IEEE-754 binary16 / bfloat16 reference: value = (-1)^s * 2^(e-bias) * 1.m,
// computed here with ldexp from the bit fields, independently of half.cc.
double ieee_decode(uint16_t bits, int exp_bits, int mant_bits) {
  int bias = (1 << (exp_bits - 1)) - 1;
  int s = bits >> 15, e = (bits >> mant_bits) & ((1 << exp_bits) - 1), m = bits & ((1 << mant_bits) - 1);
  double v;
  if (e == 0) v = std::ldexp(m, 1 - bias - mant_bits);
  else if (e == (1 << exp_bits) - 1) v = m ? NAN : INFINITY;
  else v = std::ldexp(m + (1 << mant_bits), e - bias - mant_bits);
  return s ? -v : v;
}

TEST(Half, DecodeMatchesIeeeForEveryBitPattern) {
  for (uint32_t b = 0; b < 65536; ++b) {
    auto h = static_cast<uint16_t>(b);
    double f16 = ieee_decode(h, 5, 10), bf = ieee_decode(h, 8, 7);
    if (std::isnan(f16)) EXPECT_TRUE(std::isnan(f16_to_float(h)));
    else ASSERT_EQ(static_cast<double>(f16_to_float(h)), f16) << std::hex << b;
    if (std::isnan(bf)) EXPECT_TRUE(std::isnan(bf16_to_float(h)));
    else ASSERT_EQ(static_cast<double>(bf16_to_float(h)), bf) << std::hex << b;
  }
}

TEST(Half, EncodeRoundsToNearestRepresentable) {
  // Every finite pattern round-trips, and a value between two neighbours
  // goes to the nearer one (ties to even).
  for (uint32_t b = 0; b < 0x7C00; ++b) {
    auto h = static_cast<uint16_t>(b);
    ASSERT_EQ(float_to_f16(f16_to_float(h)), h);
  }
  for (uint32_t b = 0; b < 0x7F80; ++b) {
    auto h = static_cast<uint16_t>(b);
    ASSERT_EQ(float_to_bf16(bf16_to_float(h)), h);
  }
  const float one = 1.0f, next = f16_to_float(0x3C01);
  EXPECT_EQ(float_to_f16(one + (next - one) * 0.25f), 0x3C00);
  EXPECT_EQ(float_to_f16(one + (next - one) * 0.75f), 0x3C01);
  EXPECT_EQ(float_to_f16(one + (next - one) * 0.5f), 0x3C00);  // tie -> even
  EXPECT_EQ(float_to_f16(1e6f), 0x7C00);
  EXPECT_EQ(float_to_f16(-1e6f), 0xFC00);
  EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(NAN))));
}

}  // namespace
}  // namespace radix
