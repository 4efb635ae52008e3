// An Executable may still be alive when the process exits (held in a static):
// the process must exit cleanly. ctest runs this test in its own process, so a
// crash during static destruction fails it.
#include <gtest/gtest.h>

#include <memory>

#include "test_util.h"

namespace radix {
namespace {

std::unique_ptr<Executable> g_kept;

TEST(Executable, MayOutliveMainInAStatic) {
  std::vector<Shape> in{Shape(DType::kF32, {4})};
  auto traced = trace(TraceOptions{}, in, {"x"}, 0,
                      [](std::span<const Tensor> x) { return std::vector<Tensor>{x[0] + x[0]}; });
  ASSERT_TRUE(traced.ok());
  g_kept = std::make_unique<Executable>(testing::must(testing::cpu().compile(*traced)));
  Buffer b = testing::must(testing::cpu().buffer(in[0], std::vector<float>{1, 2, 3, 4}));
  std::vector<Buffer> out = testing::must(g_kept->call({b}));
  EXPECT_EQ(testing::must(out[0].to_host<float>()), (std::vector<float>{2, 4, 6, 8}));
}

}  // namespace
}  // namespace radix
