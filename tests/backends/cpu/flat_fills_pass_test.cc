// radix-flat-fills: a fill of a contiguous buffer of rank >= 2 becomes a
// fill of its one-dimensional view (one loop, one memset in LLVM), on MLIR
// written by hand; fills of non-contiguous views and of rank-1 buffers stay.
// And end to end: a prompt times weights on two threads (each thread fills
// its own contiguous block of C, radix-fills-into-foralls) compiles to a
// handful of memsets, not one per row of C unrolled into one huge block,
// with the product against a double loop.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "backends/cpu/pass_test_util.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::count_of;
using testing::must;
namespace fs = std::filesystem;

std::string fill_of(const std::string& view, const std::string& type) {
  return R"mlir(
func.func @f(%c: memref<4096x8x16xf32>, %i: index) {
  %cst = arith.constant 0.000000e+00 : f32
  %v = memref.subview %c[%i, 0, 0] )mlir" +
         view + " : memref<4096x8x16xf32> to " + type + R"mlir(
  linalg.fill ins(%cst : f32) outs(%v : )mlir" +
         type + R"mlir()
  return
}
)mlir";
}

TEST(FlatFillsPass, ContiguousBlockIsFilledFlat) {
  const std::string ir = testing::run_pass(
      fill_of("[96, 8, 16] [1, 1, 1]", "memref<96x8x16xf32, strided<[128, 16, 1], offset: ?>>"), create_flat_fills_pass());
  EXPECT_EQ(count_of(ir, "memref.collapse_shape"), 1u) << ir;
  EXPECT_NE(ir.find("outs(%collapse_shape : memref<12288xf32, strided<[1], offset: ?>>)"), std::string::npos) << ir;
  EXPECT_EQ(count_of(ir, "linalg.fill"), 1u) << ir;
}

TEST(FlatFillsPass, NonContiguousBlockKeepsItsShape) {
  // Half of each row's panels: rows 128 floats apart, 64 filled.
  const std::string ir = testing::run_pass(
      fill_of("[96, 4, 16] [1, 1, 1]", "memref<96x4x16xf32, strided<[128, 16, 1], offset: ?>>"), create_flat_fills_pass());
  EXPECT_EQ(count_of(ir, "memref.collapse_shape"), 0u) << ir;
  EXPECT_NE(ir.find("outs(%subview : memref<96x4x16xf32"), std::string::npos) << ir;
}

TEST(FlatFillsPass, OneDimensionalFillStays) {
  const std::string ir = testing::run_pass(R"mlir(
func.func @f(%c: memref<256xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%c : memref<256xf32>)
  return
}
)mlir",
                                           create_flat_fills_pass());
  EXPECT_EQ(count_of(ir, "memref.collapse_shape"), 0u) << ir;
  EXPECT_EQ(count_of(ir, "linalg.fill"), 1u) << ir;
}

// AVX2's tiling, whose blocks the counts below describe, on any host (with
// AVX-512's the blocks are [256, 128] and LLVM writes each flat fill as one
// loop of vector stores, not a memset call).
TEST(FlatFillsPass, ThreadBlocksOfAPromptProductAreOneMemsetEach) {
  const int64_t M = 128, K = 768, N = 2048;
  std::vector<float> x = testing::random_vec<float>(size_t(M * K), -1, 1, 31);
  std::vector<float> w = testing::random_vec<float>(size_t(N * K), -1, 1, 32);
  fs::path dir = fs::temp_directory_path() / ("radix-flatfill-" + std::to_string(::getpid()));
  const testing::IsaCase avx2 = testing::kIsas[1];
  CompileFnOptions o = testing::isa_options(avx2, 2, {"llvm-ir"}, dir);
  const Shape xs(DType::kF32, {M, K}), ws(DType::kF32, {N, K});
  auto exe = must(compile_fn(
      testing::cpu(), o, [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, xs, ws));
  const std::string ir = testing::stage_dump(dir, "llvm-ir.ll");
  fs::remove_all(dir);
  // C [2048, 128] in 96-row blocks of whole rows (contiguous), one memset
  // each, and a 32-row rest of half rows (not contiguous: a memset per row,
  // 32): 33 with the declaration, against 129 with a memset per row of the
  // blocks too.
  EXPECT_GE(count_of(ir, "@llvm.memset"), 2u);
  EXPECT_LT(count_of(ir, "@llvm.memset"), 96u);
  std::vector<float> got =
      must(must(exe.call(must(testing::cpu().buffer(xs, x)), must(testing::cpu().buffer(ws, w)))).to_host<float>());
  ASSERT_EQ(got.size(), size_t(M * N));
  for (int64_t i = 0; i < M; i += 7)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(i * K + k)]) * w[size_t(j * K + k)];
      ASSERT_NEAR(got[size_t(i * N + j)], acc, 1e-4) << i << "," << j;  // 768 products of magnitude <= 1
    }
}

}  // namespace
}  // namespace radix
