// radix-accumulators-from-fill on MLIR written by hand, shaped like the
// packed matmul after bufferization: C filled with zeros, then K blocks
// around row tiles around the panel loop (marked radix.acc_tile_loop),
// whose register tile loads its accumulators from C, runs its K loop and
// stores them back. The load becomes the fill value in the first K block
// (an scf.if on the K block index), or just the fill value when nothing
// visits the tile again; it stays a load wherever the IR does not show
// that it would read the fill.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "backends/cpu/pass_test_util.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "test_util.h"

namespace radix {
namespace {

struct Nest {
  std::string fill_view = "%c";                 // the buffer the fill writes
  std::string after_fill;                       // ops between the fill and the loops
  std::string k_blocks = "scf.for %kb = %c0 to %c64 step %c32 {";  // empty: one K block
  std::string rows = "scf.for %r = %c0 to %c16 step %c8 {";
  std::string row = "%r";                       // the tile's row offset
};

std::string nest(const Nest& n) {
  const bool kb = !n.k_blocks.empty();
  return R"mlir(
func.func @f(%c: memref<16x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %top = memref.subview %c[0, 0] [8, 32] [1, 1] : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1]>>
  linalg.fill ins(%cst : f32) outs()mlir" +
         n.fill_view + " : " + (n.fill_view == "%top" ? "memref<8x32xf32, strided<[32, 1]>>" : "memref<16x32xf32>") +
         ")\n  " + n.after_fill + "\n  " + n.k_blocks + "\n    " + n.rows + R"mlir(
      scf.for %p = %c0 to %c32 step %c16 {
        %tile = memref.subview %c[)mlir" +
         n.row + R"mlir(, %p] [8, 16] [1, 1] : memref<16x32xf32> to memref<8x16xf32, strided<[32, 1], offset: ?>>
        %acc = vector.transfer_read %tile[%c0, %c0], %cst {in_bounds = [true, true]} : memref<8x16xf32, strided<[32, 1], offset: ?>>, vector<8x16xf32>
        %sum = scf.for %k = %c0 to %c32 step %c1 iter_args(%x = %acc) -> (vector<8x16xf32>) {
          %y = arith.addf %x, %x : vector<8x16xf32>
          scf.yield %y : vector<8x16xf32>
        }
        vector.transfer_write %sum, %tile[%c0, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, memref<8x16xf32, strided<[32, 1], offset: ?>>
      } {radix.acc_tile_loop}
    })mlir" + std::string(kb ? "\n  }" : "") + R"mlir(
  return
}
)mlir";
}

std::string run_pass(const std::string& source) {
  return testing::run_pass(source, create_accumulators_from_fill_pass());
}

using testing::count_of;

// Whether the K loop starts from the load, unchanged.
bool loads_accumulators(const std::string& ir) {
  return count_of(ir, "vector.transfer_read") == 1 && count_of(ir, "scf.if") == 0 &&
         count_of(ir, "vector.broadcast") == 0;
}

TEST(AccumulatorsFromFillPass, FirstKBlockStartsFromTheFillValue) {
  const std::string ir = run_pass(nest({}));
  // The first K block (%kb at its lower bound) takes the fill value, the
  // others load the tile; the mark stays for radix-prefetch-next-tile.
  EXPECT_TRUE(std::regex_search(ir, std::regex(R"(arith.cmpi eq, %\w+, %c0)"))) << ir;
  EXPECT_TRUE(std::regex_search(
      ir, std::regex(R"(scf.if %\w+ -> \(vector<8x16xf32>\) \{\s*%\w+ = vector.broadcast %cst : f32 to vector<8x16xf32>)")))
      << ir;
  EXPECT_EQ(count_of(ir, "vector.transfer_read"), 1u) << ir;
  EXPECT_NE(ir.find("} else {"), std::string::npos) << ir;
  EXPECT_NE(ir.find("radix.acc_tile_loop"), std::string::npos) << ir;
}

TEST(AccumulatorsFromFillPass, TileVisitedOnceTakesTheFillValue) {
  Nest n;
  n.k_blocks.clear();
  const std::string ir = run_pass(nest(n));
  EXPECT_EQ(count_of(ir, "vector.transfer_read"), 0u) << ir;
  EXPECT_EQ(count_of(ir, "scf.if"), 0u) << ir;
  EXPECT_NE(ir.find("vector.broadcast %cst : f32 to vector<8x16xf32>"), std::string::npos) << ir;
}

TEST(AccumulatorsFromFillPass, ParallelRowTilesKeepTheConditionOnKOnly) {
  Nest n;
  n.rows = "scf.forall (%r8) in (2) {\n      %r = arith.muli %r8, %c8 : index";
  const std::string ir = run_pass(nest(n));
  EXPECT_EQ(count_of(ir, "arith.cmpi eq"), 1u) << ir;
  EXPECT_EQ(count_of(ir, "scf.if"), 1u) << ir;
}

TEST(AccumulatorsFromFillPass, OtherWritesToCKeepTheLoad) {
  Nest n;
  n.after_fill = "memref.store %one, %c[%c0, %c0] : memref<16x32xf32>";
  EXPECT_TRUE(loads_accumulators(run_pass(nest(n))));
}

TEST(AccumulatorsFromFillPass, WriteToAnOverlappingPartOfCKeepsTheLoad) {
  Nest n;
  n.after_fill =
      "%part = memref.subview %c[8, 0] [8, 32] [1, 1] : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1], "
      "offset: 256>>\n  memref.store %one, %part[%c0, %c0] : memref<8x32xf32, strided<[32, 1], offset: 256>>";
  EXPECT_TRUE(loads_accumulators(run_pass(nest(n))));
}

// A product split in two parts (rows 0-7 and 8-15 of C, as the AVX2
// schedule's 6- and 4-row parts): the second part's tiles still start from
// the fill, the first part's stores being to the other rows.
TEST(AccumulatorsFromFillPass, SecondPartOfASplitProductStartsFromTheFill) {
  const std::string part = R"mlir(
  %PART = memref.subview %c[ROW, 0] [8, 32] [1, 1] : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1], offset: OFF>>
  scf.for %kbPART = %c0 to %c64 step %c32 {
    scf.for %pPART = %c0 to %c32 step %c16 {
      %tPART = memref.subview %PART[0, %pPART] [8, 16] [1, 1] : memref<8x32xf32, strided<[32, 1], offset: OFF>> to memref<8x16xf32, strided<[32, 1], offset: ?>>
      %aPART = vector.transfer_read %tPART[%c0, %c0], %cst {in_bounds = [true, true]} : memref<8x16xf32, strided<[32, 1], offset: ?>>, vector<8x16xf32>
      %sPART = scf.for %k = %c0 to %c32 step %c1 iter_args(%x = %aPART) -> (vector<8x16xf32>) {
        %y = arith.addf %x, %x : vector<8x16xf32>
        scf.yield %y : vector<8x16xf32>
      }
      vector.transfer_write %sPART, %tPART[%c0, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, memref<8x16xf32, strided<[32, 1], offset: ?>>
    } {radix.acc_tile_loop}
  })mlir";
  auto instance = [&](const std::string& name, const std::string& row, const std::string& off) {
    std::string s = std::regex_replace(part, std::regex("PART"), name);
    s = std::regex_replace(s, std::regex("ROW"), row);
    return std::regex_replace(s, std::regex("OFF"), off);
  };
  const std::string src = R"mlir(
func.func @f(%c: memref<16x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  linalg.fill ins(%cst : f32) outs(%c : memref<16x32xf32>))mlir" +
                          instance("top", "0", "0") + instance("bottom", "8", "256") + R"mlir(
  return
}
)mlir";
  const std::string ir = run_pass(src);
  EXPECT_EQ(count_of(ir, "scf.if"), 2u) << ir;
  EXPECT_EQ(count_of(ir, "vector.transfer_read"), 2u) << ir;  // one per part, in the else branches
}

TEST(AccumulatorsFromFillPass, FillOfAnotherPartOfCKeepsTheLoad) {
  Nest n;
  n.fill_view = "%top";  // rows 0-7 only; the row tiles cover 0-15
  EXPECT_TRUE(loads_accumulators(run_pass(nest(n))));
}

TEST(AccumulatorsFromFillPass, AddressThatMaySendTwoIterationsToOneTileKeepsTheLoad) {
  Nest n;
  n.rows = "scf.for %r0 = %c0 to %c16 step %c4 {\n      %r = arith.minsi %r0, %c8 : index";
  EXPECT_TRUE(loads_accumulators(run_pass(nest(n))));
}

TEST(AccumulatorsFromFillPass, UnknownEffectsKeepTheLoad) {
  Nest n;
  n.after_fill = "func.call @g(%c) : (memref<16x32xf32>) -> ()";
  std::string src = nest(n) + "func.func private @g(memref<16x32xf32>)\n";
  EXPECT_TRUE(loads_accumulators(run_pass(src)));
}

}  // namespace
}  // namespace radix
