// The attribute writer on its own: a bare func.func in a bare MLIRContext,
// each writer called, the printed attributes checked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "radix/trace/function_attributes.h"
#include "radix/trace/trace_error.h"
#include "test_util.h"

namespace radix {
namespace {

using detail::sharding_representation;

using testing::count_of;

// func.func @main(f16[8] x n_args) -> (f16[8] x n_results), no body.
struct BareFunction {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp fn;

  BareFunction(int n_args, int n_results) {
    ctx.loadDialect<mlir::func::FuncDialect>();
    mlir::OpBuilder b(&ctx);
    module = mlir::ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    mlir::Type t = mlir::RankedTensorType::get({8}, b.getF16Type());
    std::vector<mlir::Type> args(static_cast<size_t>(n_args), t), results(static_cast<size_t>(n_results), t);
    fn = mlir::func::FuncOp::create(b, b.getUnknownLoc(), "main", b.getFunctionType(args, results));
  }
  std::string text() {
    std::string s;
    llvm::raw_string_ostream os(s);
    fn->print(os);
    return s;
  }
};

const Shape kF16x8(DType::kF16, {8});

TEST(FunctionAttributes, ArgumentNamesSkipEmptyOnes) {
  BareFunction f(3, 1);
  std::vector<std::string> names = {"layers.0.w", "", "arg0"};
  detail::write_argument_names(f.fn, names);
  EXPECT_EQ(count_of(f.text(), "radix.name"), 2u) << f.text();
  EXPECT_NE(f.text().find("{radix.name = \"layers.0.w\"}"), std::string::npos) << f.text();
  EXPECT_NE(f.text().find("{radix.name = \"arg0\"}"), std::string::npos) << f.text();
}

TEST(FunctionAttributes, DonationsNameTheResult) {
  BareFunction f(3, 2);
  std::vector<int> donations = {2, 0};  // result 0 reuses argument 2, result 1 argument 0
  std::vector<Shape> inputs(3, kF16x8);
  detail::write_donations(f.fn, donations, inputs);
  EXPECT_EQ(f.fn.getArgAttrOfType<mlir::IntegerAttr>(2, "tf.aliasing_output").getInt(), 0);
  EXPECT_EQ(f.fn.getArgAttrOfType<mlir::IntegerAttr>(0, "tf.aliasing_output").getInt(), 1);
  EXPECT_FALSE(f.fn.getArgAttr(1, "tf.aliasing_output"));
  EXPECT_NE(f.text().find("tf.aliasing_output = 0 : i32"), std::string::npos) << f.text();
  EXPECT_NE(f.text().find("tf.aliasing_output = 1 : i32"), std::string::npos) << f.text();
}

TEST(FunctionAttributes, DonatingOneArgumentTwiceNamesBothResults) {
  BareFunction f(2, 3);
  std::vector<int> donations = {-1, 1, 1};
  std::vector<Shape> inputs = {kF16x8, Shape(DType::kF16, {8}, {"d"})};
  try {
    detail::write_donations(f.fn, donations, inputs);
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("argument 1 (f16[d=8]) is donated to two results, 1 and 2"), std::string::npos) << m;
  }
}

TEST(FunctionAttributes, MemoryKindOnlyOffDevice) {
  BareFunction f(1, 3);
  std::vector<MemoryKind> kinds = {MemoryKind::kDevice, MemoryKind::kPinnedHost, MemoryKind::kDevice};
  detail::write_output_memory_kinds(f.fn, kinds);
  EXPECT_EQ(count_of(f.text(), "mhlo.memory_kind"), 1u) << f.text();
  EXPECT_FALSE(f.fn.getResultAttr(0, "mhlo.memory_kind"));
  auto attr = f.fn.getResultAttrOfType<mlir::StringAttr>(1, "mhlo.memory_kind");
  ASSERT_TRUE(attr);
  EXPECT_EQ(attr.getValue().str(), "pinned_host");
  EXPECT_NE(f.text().find("{mhlo.memory_kind = \"pinned_host\"}"), std::string::npos) << f.text();
}

// The seeds' three cases (ZML's writeShardingRepresentation test), then
// meshes of several axes.
TEST(FunctionAttributes, ShardingRepresentation) {
  const Shape x(DType::kF32, {16, 8}, {"a", "b"});
  const Mesh four({{"p", 4}}), two({{"p", 2}});
  // By default tensors are replicated.
  EXPECT_EQ(sharding_representation(x, four), "{replicated}");
  // Shard along the first axis.
  EXPECT_EQ(sharding_representation(x.with_partition(0, "p"), four), "{devices=[4,1]<=[4]}");
  // Also along the second axis (as the seed writes it: both over one mesh
  // axis, which Mesh::check refuses for a real program).
  EXPECT_EQ(sharding_representation(x.with_partition(0, "p").with_partition(1, "p"), two), "{devices=[2,2]<=[2]}");

  // One device: always replicated.
  EXPECT_EQ(sharding_representation(x.with_partition(0, "p"), Mesh()), "{replicated}");
  EXPECT_EQ(sharding_representation(Shape(DType::kF32, {16}).with_partition(0, "p"), four), "{devices=[4]<=[4]}");
  const Mesh m({{"data", 2}, {"model", 4}});
  // Both mesh axes, in mesh order: the plain iota.
  EXPECT_EQ(sharding_representation(x.with_partition(0, "data").with_partition(1, "model"), m), "{devices=[2,4]<=[8]}");
  // Out of mesh order: the iota transposed.
  EXPECT_EQ(sharding_representation(x.with_partition(0, "model").with_partition(1, "data"), m),
            "{devices=[4,2]<=[2,4]T(1,0)}");
  // A mesh axis splitting nothing replicates the tiles.
  EXPECT_EQ(sharding_representation(x.with_partition(0, "data"), m), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(sharding_representation(x.with_partition(1, "model"), m),
            "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
}

TEST(FunctionAttributes, ShardingsOnlyWithSeveralDevices) {
  std::vector<Shape> in = {kF16x8.with_partition(0, "p"), kF16x8}, out = {kF16x8};
  {
    BareFunction f(2, 1);
    detail::write_shardings(f.fn, in, out, Mesh());
    EXPECT_EQ(count_of(f.text(), "mhlo.sharding"), 0u) << f.text();
  }
  BareFunction f(2, 1);
  detail::write_shardings(f.fn, in, out, Mesh({{"p", 4}}));
  EXPECT_EQ(count_of(f.text(), "mhlo.sharding"), 3u) << f.text();
  EXPECT_EQ(f.fn.getArgAttrOfType<mlir::StringAttr>(0, "mhlo.sharding").getValue().str(), "{devices=[4]<=[4]}");
  EXPECT_EQ(f.fn.getArgAttrOfType<mlir::StringAttr>(1, "mhlo.sharding").getValue().str(), "{replicated}");
  EXPECT_EQ(f.fn.getResultAttrOfType<mlir::StringAttr>(0, "mhlo.sharding").getValue().str(), "{replicated}");
}

TEST(FunctionAttributes, AllWritersTogether) {
  // As @main gets them: names, one donation, a pinned-host result.
  BareFunction f(2, 2);
  std::vector<std::string> names = {"bias", "arg0"};
  std::vector<int> donations = {1, -1};
  std::vector<MemoryKind> kinds = {MemoryKind::kDevice, MemoryKind::kPinnedHost};
  std::vector<Shape> inputs(2, kF16x8);
  detail::write_argument_names(f.fn, names);
  detail::write_donations(f.fn, donations, inputs);
  detail::write_output_memory_kinds(f.fn, kinds);
  EXPECT_NE(f.text().find("{radix.name = \"arg0\", tf.aliasing_output = 0 : i32}"), std::string::npos) << f.text();
  EXPECT_NE(f.text().find("{mhlo.memory_kind = \"pinned_host\"}"), std::string::npos) << f.text();
}

}  // namespace
}  // namespace radix
