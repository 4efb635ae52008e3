// radix-stack-small-buffers on MLIR written by hand: a small temporary that
// one-shot bufferization threads through a 2-D tile nest (the inner loop's
// result yielded by the outer one) moves to the stack; one allocated inside
// a loop and carried to the next iteration, or returned, stays on the heap
// (one stack slot for every iteration would hold two iterations' values).
// A scratch buffer freed in its own block (the kernel passes') moves with
// its dealloc; one freed in another block (a conditional free) stays.
#include <gtest/gtest.h>

#include <string>

#include "backends/cpu/pass_test_util.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::count_of;

TEST(StackBuffersPass, TileNestOutputMovesToTheStack) {
  // A [6, 24] temporary filled in tiles of [1, 8] through iter_args of two
  // loops, then read once.
  const std::string ir = testing::run_pass(R"mlir(
func.func @f(%x: memref<6x24xf32>, %out: memref<6x24xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c24 = arith.constant 24 : index
  %t = memref.alloc() {alignment = 64 : i64} : memref<6x24xf32>
  %r = scf.for %i = %c0 to %c6 step %c1 iter_args(%a = %t) -> (memref<6x24xf32>) {
    %r2 = scf.for %j = %c0 to %c24 step %c8 iter_args(%b = %a) -> (memref<6x24xf32>) {
      %s = memref.subview %b[%i, %j] [1, 8] [1, 1] : memref<6x24xf32> to memref<1x8xf32, strided<[24, 1], offset: ?>>
      %xs = memref.subview %x[%i, %j] [1, 8] [1, 1] : memref<6x24xf32> to memref<1x8xf32, strided<[24, 1], offset: ?>>
      memref.copy %xs, %s : memref<1x8xf32, strided<[24, 1], offset: ?>> to memref<1x8xf32, strided<[24, 1], offset: ?>>
      scf.yield %b : memref<6x24xf32>
    }
    scf.yield %r2 : memref<6x24xf32>
  }
  memref.copy %r, %out : memref<6x24xf32> to memref<6x24xf32>
  return
}
)mlir",
                                           create_stack_small_buffers_pass());
  EXPECT_EQ(count_of(ir, "memref.alloca()"), 1u) << ir;
  EXPECT_EQ(count_of(ir, "memref.alloc()"), 0u) << ir;
}

TEST(StackBuffersPass, BufferCarriedToTheNextIterationStaysOnTheHeap) {
  // Each iteration allocates a new buffer from the previous one's values.
  const std::string ir = testing::run_pass(R"mlir(
func.func @f(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> (memref<8xf32>) {
    %n = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
    linalg.add ins(%a, %a : memref<8xf32>, memref<8xf32>) outs(%n : memref<8xf32>)
    scf.yield %n : memref<8xf32>
  }
  memref.copy %r, %out : memref<8xf32> to memref<8xf32>
  return
}
)mlir",
                                           create_stack_small_buffers_pass());
  EXPECT_EQ(count_of(ir, "memref.alloca()"), 0u) << ir;
  EXPECT_EQ(count_of(ir, "memref.alloc()"), 1u) << ir;
}

TEST(StackBuffersPass, ReturnedBufferStaysOnTheHeap) {
  const std::string ir = testing::run_pass(R"mlir(
func.func @f(%x: memref<8xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %t = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %t) -> (memref<8xf32>) {
    linalg.add ins(%x, %x : memref<8xf32>, memref<8xf32>) outs(%a : memref<8xf32>)
    scf.yield %a : memref<8xf32>
  }
  return %r : memref<8xf32>
}
)mlir",
                                           create_stack_small_buffers_pass());
  EXPECT_EQ(count_of(ir, "memref.alloca()"), 0u) << ir;
  EXPECT_EQ(count_of(ir, "memref.alloc()"), 1u) << ir;
}

TEST(StackBuffersPass, ScratchFreedInItsBlockMovesWithItsDealloc) {
  // A kernel's scratch (the int8 decode kernels' x sums): allocated, filled
  // in a loop, read, and freed in the same block, as the passes after the
  // deallocation pipeline write it. Runs once per call: to the stack, the
  // dealloc gone (next to an earlier run's stack buffer).
  const std::string ir = testing::run_pass(R"mlir(
func.func @f(%x: memref<9xi32>, %out: memref<9xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %early = memref.alloca() {alignment = 64 : i64} : memref<16xi32>
  %t = memref.alloc() {alignment = 32 : i64} : memref<1x9xi32>
  scf.for %i = %c0 to %c9 step %c1 {
    %v = memref.load %x[%i] : memref<9xi32>
    memref.store %v, %t[%c0, %i] : memref<1x9xi32>
  }
  scf.for %i = %c0 to %c9 step %c1 {
    %v = memref.load %t[%c0, %i] : memref<1x9xi32>
    memref.store %v, %out[%i] : memref<9xi32>
  }
  memref.dealloc %t : memref<1x9xi32>
  return
}
)mlir",
                                           create_stack_small_buffers_pass());
  EXPECT_EQ(count_of(ir, "memref.alloca()"), 2u) << ir;
  EXPECT_EQ(count_of(ir, "memref.alloc()"), 0u) << ir;
  EXPECT_EQ(count_of(ir, "memref.dealloc"), 0u) << ir;
}

TEST(StackBuffersPass, BufferFreedElsewhereStaysOnTheHeap) {
  // Freed in a branch (ownership-based deallocation's conditional free):
  // its lifetime is not the block's, so it stays as it is.
  const std::string ir = testing::run_pass(R"mlir(
func.func @f(%x: memref<8xf32>, %out: memref<8xf32>, %p: i1) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  linalg.add ins(%x, %x : memref<8xf32>, memref<8xf32>) outs(%t : memref<8xf32>)
  memref.copy %t, %out : memref<8xf32> to memref<8xf32>
  scf.if %p {
    memref.dealloc %t : memref<8xf32>
  }
  return
}
)mlir",
                                           create_stack_small_buffers_pass());
  EXPECT_EQ(count_of(ir, "memref.alloca()"), 0u) << ir;
  EXPECT_EQ(count_of(ir, "memref.alloc()"), 1u) << ir;
  EXPECT_EQ(count_of(ir, "memref.dealloc"), 1u) << ir;
}

}  // namespace
}  // namespace radix
