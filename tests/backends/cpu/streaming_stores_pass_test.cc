// radix-streaming-stores on MLIR written by hand: which writes of an output
// become non-temporal stores, and in what pieces. A vector of 16 floats is
// stored whole where its address is 64-byte aligned, as four non-temporal
// 4-float pieces where only 16 bytes align it (rows of 300 f32 start at
// every 16 bytes: three rows in four), and with the original store else;
// an output that the function also reads keeps its stores. End to end
// (bits and references on every ISA): streaming_stores_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "backends/cpu/pass_test_util.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::count_of;

// %out[%i, %j .. %j + lanes) = %v, and with `read`, a load of %out first.
std::string store_of(int64_t lanes, bool read = false) {
  const std::string vt = "vector<" + std::to_string(lanes) + "xf32>";
  return R"mlir(
func.func @f(%out: memref<8x300xf32>, %v: )mlir" +
         vt + R"mlir(, %i: index, %j: index) -> f32 {
  %z = arith.constant 0.0 : f32
)mlir" + (read ? "  %r = memref.load %out[%i, %j] : memref<8x300xf32>\n" : "  %r = arith.addf %z, %z : f32\n") +
         "  vector.store %v, %out[%i, %j] : memref<8x300xf32>, " + vt + R"mlir(
  return %r : f32
}
)mlir";
}

TEST(StreamingStoresPass, SixteenFloatsStreamWholeOrInSixteenBytePieces) {
  const std::string ir = testing::run_pass(store_of(16), create_streaming_stores_pass(), "min-bytes=1");
  // Whole (64-byte aligned), four pieces (16-byte aligned), the original store.
  EXPECT_EQ(count_of(ir, "nontemporal = true} : memref<8x300xf32>, vector<16xf32>"), 1u) << ir;
  EXPECT_EQ(count_of(ir, "nontemporal = true} : memref<8x300xf32>, vector<4xf32>"), 4u) << ir;
  EXPECT_EQ(count_of(ir, "vector.extract_strided_slice"), 4u) << ir;
  for (const char* offset : {"offsets = [0]", "offsets = [4]", "offsets = [8]", "offsets = [12]"})
    EXPECT_NE(ir.find(offset), std::string::npos) << offset << "\n" << ir;
  EXPECT_EQ(count_of(ir, "vector.store"), 6u) << ir;
  EXPECT_EQ(count_of(ir, "scf.if"), 2u) << ir;
  EXPECT_NE(ir.find("llvm.x86.sse.sfence"), std::string::npos) << ir;
}

TEST(StreamingStoresPass, FourFloatsNeedNoPieces) {
  const std::string ir = testing::run_pass(store_of(4), create_streaming_stores_pass(), "min-bytes=1");
  EXPECT_EQ(count_of(ir, "nontemporal = true} : memref<8x300xf32>, vector<4xf32>"), 1u) << ir;
  EXPECT_EQ(count_of(ir, "vector.extract_strided_slice"), 0u) << ir;
  EXPECT_EQ(count_of(ir, "scf.if"), 1u) << ir;
}

TEST(StreamingStoresPass, OutputThatIsReadOrSmallKeepsItsStores) {
  for (const auto& [source, options] : {std::pair<std::string, std::string>{store_of(16, /*read=*/true), "min-bytes=1"},
                                        {store_of(16), "min-bytes=100000"}}) {
    const std::string ir = testing::run_pass(source, create_streaming_stores_pass(), options);
    EXPECT_EQ(count_of(ir, "nontemporal"), 0u) << ir;
    EXPECT_EQ(count_of(ir, "sfence"), 0u) << ir;
    EXPECT_EQ(count_of(ir, "vector.store"), 1u) << ir;
  }
}

}  // namespace
}  // namespace radix
