#include "radix/core/mesh.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "radix/runtime/sharding.h"

namespace radix {
namespace {

TEST(Mesh, AxesSizesAndDevices) {
  Mesh m({{"data", 2}, {"model", 3}});
  EXPECT_EQ(m.rank(), 2);
  EXPECT_EQ(m.num_devices(), 6);
  EXPECT_EQ(m.find("model"), 1);
  EXPECT_FALSE(m.find("x").has_value());
  EXPECT_EQ(m.to_string(), "mesh[data=2,model=3]");
  EXPECT_TRUE(Mesh().single_device());
  EXPECT_EQ(Mesh().num_devices(), 1);
  // Row-major: device d = data * 3 + model.
  for (int64_t d = 0; d < 6; ++d) {
    EXPECT_EQ(m.coordinate(d, 0), d / 3);
    EXPECT_EQ(m.coordinate(d, 1), d % 3);
  }
}

TEST(Mesh, InvalidMeshesThrow) {
  EXPECT_THROW(Mesh({{"a", 2}, {"a", 2}}), std::invalid_argument);
  EXPECT_THROW(Mesh({{"a", 0}}), std::invalid_argument);
  EXPECT_THROW(Mesh({{"", 2}}), std::invalid_argument);
  EXPECT_THROW(Mesh({{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}}), std::invalid_argument);
}

TEST(Mesh, CheckNamesShapeAxisAndMesh) {
  Mesh m({{"data", 2}, {"model", 4}});
  Shape s(DType::kF32, {6, 8}, {"b", "d"});
  EXPECT_FALSE(m.check(s).has_value());
  EXPECT_FALSE(m.check(s.with_partition("d", "model")).has_value());
  auto uneven = m.check(s.with_partition("b", "model"));
  ASSERT_TRUE(uneven.has_value());
  EXPECT_NE(uneven->find("size 6"), std::string::npos) << *uneven;
  EXPECT_NE(uneven->find("'model' of size 4"), std::string::npos) << *uneven;
  auto unknown = m.check(s.with_partition("d", "pipe"));
  ASSERT_TRUE(unknown.has_value());
  EXPECT_NE(unknown->find("'pipe'"), std::string::npos) << *unknown;
  EXPECT_NE(unknown->find("mesh[data=2,model=4]"), std::string::npos) << *unknown;
  auto twice = m.check(s.with_partition("b", "data").with_partition("d", "data"));
  ASSERT_TRUE(twice.has_value());
  EXPECT_NE(twice->find("splits both axis 0 and axis 1"), std::string::npos) << *twice;
}

TEST(Mesh, LocalAndGlobalShapes) {
  Mesh m({{"data", 2}, {"model", 4}});
  Shape g = Shape(DType::kF32, {6, 8, 5}, {"b", "d", "e"}).with_partition("b", "data").with_partition("d", "model");
  Shape l = m.local_shape(g);
  EXPECT_EQ(l.to_string(), "f32[b=3@data,d=2@model,e=5]");
  EXPECT_EQ(m.global_shape(l), g);
}

// Every device's block, copied out of a whole array and back, rebuilds it;
// each block holds exactly the elements a naive index calculation says.
TEST(Mesh, ShardBlocksTileTheArray) {
  Mesh m({{"data", 2}, {"model", 3}});
  Shape g = Shape(DType::kI32, {4, 6, 2}).with_partition(0, "data").with_partition(1, "model");
  std::vector<int32_t> whole(static_cast<size_t>(g.count()));
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<int32_t>(i);
  std::vector<int32_t> rebuilt(whole.size(), -1);
  Shape l = m.local_shape(g);
  for (int64_t d = 0; d < m.num_devices(); ++d) {
    std::vector<int32_t> part(static_cast<size_t>(l.count()));
    copy_shard_block(g, m, d, 4, reinterpret_cast<const std::byte*>(whole.data()),
                     reinterpret_cast<std::byte*>(part.data()), true);
    const int64_t r0 = m.coordinate(d, 0) * 2, c0 = m.coordinate(d, 1) * 2;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 2; ++k)
          EXPECT_EQ(part[static_cast<size_t>((i * 2 + j) * 2 + k)], ((r0 + i) * 6 + (c0 + j)) * 2 + k) << d;
    copy_shard_block(g, m, d, 4, reinterpret_cast<const std::byte*>(part.data()),
                     reinterpret_cast<std::byte*>(rebuilt.data()), false);
  }
  EXPECT_EQ(rebuilt, whole);
}

}  // namespace
}  // namespace radix
