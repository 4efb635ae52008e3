// radix-merge-foralls on MLIR written by hand: two independent loops of 2
// and 1000 tiles (tiles of very different cost, as a packed matmul's and an
// elementwise op's) become one loop with an iteration per thread, each
// running its own static share of both loops' tiles, so that neither
// thread gets all of the costly loop; a loop that reads what the other
// writes is left alone.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "backends/cpu/pass_test_util.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "test_util.h"

namespace radix {
namespace {

// @f(%x, %y, %z): loop A (2 tiles) writes %y from %x, loop B (1000 tiles)
// writes %z from `b_reads` (%x: independent of A; %y: reads A's output).
std::string two_loops(const std::string& b_reads) {
  return R"mlir(
func.func @f(%x: memref<1000xf32>, %y: memref<1000xf32>, %z: memref<1000xf32>) {
  scf.forall (%i) in (2) {
    %v = memref.load %x[%i] : memref<1000xf32>
    memref.store %v, %y[%i] : memref<1000xf32>
  }
  scf.forall (%j) in (1000) {
    %v = memref.load )mlir" +
         b_reads + R"mlir([%j] : memref<1000xf32>
    memref.store %v, %z[%j] : memref<1000xf32>
  }
  return
}
)mlir";
}

std::string run_pass(const std::string& source, int threads) {
  return testing::run_pass(source, create_merge_foralls_pass(), "threads=" + std::to_string(threads));
}

using testing::count_of;

TEST(MergeForallsPass, EachThreadRunsItsShareOfBothLoops) {
  const std::string ir = run_pass(two_loops("%x"), 2);
  EXPECT_EQ(count_of(ir, "scf.forall"), 1u) << ir;
  // One iteration per thread, each a loop over its share of A's 2 tiles and
  // one over its share of B's 1000 ([t n / 2, (t + 1) n / 2)).
  EXPECT_TRUE(std::regex_search(ir, std::regex(R"(scf.forall \(%\w+\) in \(2\))"))) << ir;
  EXPECT_EQ(count_of(ir, "scf.for "), 2u) << ir;
  EXPECT_NE(ir.find("arith.constant 1000 : index"), std::string::npos) << ir;
  EXPECT_NE(ir.find("arith.divui"), std::string::npos) << ir;
  EXPECT_EQ(count_of(ir, "memref.store"), 2u) << ir;
}

TEST(MergeForallsPass, LoopReadingTheOthersOutputStaysApart) {
  const std::string ir = run_pass(two_loops("%y"), 2);
  EXPECT_EQ(count_of(ir, "scf.forall"), 2u) << ir;
  EXPECT_EQ(count_of(ir, "scf.for "), 0u) << ir;
}

TEST(MergeForallsPass, OneThreadLeavesTheLoops) {
  const std::string ir = run_pass(two_loops("%x"), 1);
  EXPECT_EQ(count_of(ir, "scf.forall"), 2u) << ir;
}

}  // namespace
}  // namespace radix
