// Constructors against their definitions (exact, or one rounding to the dtype
// from the double formula), on every schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

TEST(Constructors, ArangeLinspaceEyeMasks) {
  const VectorIsa isas[] = {{4, 16}, {8, 16}, {16, 32}, {0, 0}};
  for (const VectorIsa& isa : isas) {
    SCOPED_TRACE("schedule_isa " + std::to_string(isa.f32_lanes));
    g_opts.compile.codegen.cpu.schedule_isa = isa;
    Outs o = run([]() {
      return std::vector<Tensor>{arange(2, 11, 3, DType::kI32),     arange(1.0, -1.0, -0.25, DType::kF32, "t"),
                                 linspace(0, 1, 11, DType::kF64),   linspace(-2, 2, 4, DType::kF32, Tag(), false),
                                 eye(3, 5, DType::kI8, 1, "r", "c"), tril_mask(4, 4), triu_mask(3, 5, 2),
                                 zeros(Shape(DType::kU16, {3})),    ones(Shape(DType::kBF16, {2, 2}))};
    }, {});
    EXPECT_TRUE(close(o.values[0], {2, 5, 8}, DType::kI32));
    EXPECT_EQ(o.shapes[1], Shape(DType::kF32, {8}, {"t"}));
    EXPECT_TRUE(close(o.values[1], {1, 0.75, 0.5, 0.25, 0, -0.25, -0.5, -0.75}, DType::kF32));
    Vals lin;
    for (int i = 0; i < 11; ++i) lin.push_back(i == 10 ? 1.0 : i * 0.1);
    EXPECT_TRUE(close(o.values[2], lin, DType::kF64));
    EXPECT_TRUE(close(o.values[3], {-2, -1, 0, 1}, DType::kF32));
    Vals ey, tl, tu;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c) ey.push_back(c - r == 1);
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) tl.push_back(c <= r);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c) tu.push_back(c >= r + 2);
    EXPECT_EQ(o.shapes[4], Shape(DType::kI8, {3, 5}, {"r", "c"}));
    EXPECT_TRUE(close(o.values[4], ey, DType::kI8));
    EXPECT_TRUE(close(o.values[5], tl, DType::kBool));
    EXPECT_TRUE(close(o.values[6], tu, DType::kBool));
    EXPECT_TRUE(close(o.values[7], {0, 0, 0}, DType::kU16));
    EXPECT_TRUE(close(o.values[8], {1, 1, 1, 1}, DType::kBF16));
  }
  g_opts.compile.codegen.cpu.schedule_isa = {};
}

TEST(Constructors, BadArgumentsAreTraceErrors) {
  auto msg = [](std::function<Tensor()> f) {
    auto e = compile_fn(testing::cpu(), f);
    return e.ok() ? std::string("(compiled)") : e.status().message();
  };
  EXPECT_NE(msg([] { return arange(0, 5, 0); }).find("non-zero step"), std::string::npos);
  EXPECT_NE(msg([] { return linspace(0, 1, -3); }).find("linspace: negative count -3"), std::string::npos);
  EXPECT_NE(msg([] { return eye(-1, 2); }).find("eye: negative size -1"), std::string::npos);
}

}  // namespace
}  // namespace radix
