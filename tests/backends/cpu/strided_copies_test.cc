// Copies between buffers that are not both contiguous (radix-strided-copies-
// to-loops): the pieces of a concatenation along the last axis written into
// column slices of the output, as rows of 64-byte vectors with the rest of
// each row one masked vector; f32 and bf16 (16 and 32 lanes), rows shorter
// than a vector, of a few vectors and of more than the unrolled limit (a
// loop over the vectors), bit for bit against a C++ loop, on every ISA's
// tiling.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;
namespace fs = std::filesystem;

// concatenate(x [R, a], y [R, b]) on the last axis (host elements T: float
// for f32, the bits for bf16), checked against a loop; the bufferized IR is
// returned.
template <class T>
std::string concat_case(DType d, int64_t R, int64_t a, int64_t b, const testing::IsaCase& isa) {
  const std::string what = std::string(dtype_name(d)) + " " + std::to_string(a) + "+" + std::to_string(b) + " " + isa.name;
  const Shape sx(d, {R, a}, {"r", "c"}), sy(d, {R, b}, {"r", "c"});
  const fs::path dir = fs::temp_directory_path() / ("radix-copies-" + std::to_string(::getpid()));
  CompileFnOptions o = testing::isa_options(isa, 1, {"bufferize"}, dir);
  auto exe = must(compile_fn(cpu(), o, [](Tensor x, Tensor y) { return concatenate({x, y}, "c"); }, sx, sy));
  const std::string ir = testing::stage_dump(dir, "bufferize.mlir");
  fs::remove_all(dir);
  // Finite values either way: small integers (f32), bf16 1.0 .. 1.75.
  auto value = [](size_t k) { return std::is_same_v<T, float> ? T(float(k % 1000) - 500.f) : T(0x3f80 + k % 97); };
  std::vector<T> x(size_t(R * a)), y(size_t(R * b));
  for (size_t i = 0; i < x.size(); ++i) x[i] = value(i * 7 + 1);
  for (size_t i = 0; i < y.size(); ++i) y[i] = value(i * 13 + 5);
  std::vector<T> got = must(must(exe.call(must(cpu().buffer(sx, x)), must(cpu().buffer(sy, y)))).template to_host<T>());
  EXPECT_EQ(got.size(), size_t(R * (a + b))) << what;
  if (got.size() != size_t(R * (a + b))) return ir;
  int64_t wrong = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < a + b; ++c) {
      const T want = c < a ? x[size_t(r * a + c)] : y[size_t(r * b + c - a)];
      if (got[size_t(r * (a + b) + c)] != want && wrong++ == 0)
        ADD_FAILURE() << what << ": first wrong element at row " << r << " column " << c;
    }
  EXPECT_EQ(wrong, 0) << what;
  return ir;
}

TEST(StridedCopies, RowsCopyAsVectorsWithAMaskedRest) {
  for (const testing::IsaCase& isa : testing::kIsas) {
    // 13 + 19 f32: both pieces' rows in one masked vector (and one whole one).
    std::string ir = concat_case<float>(DType::kF32, 37, 13, 19, isa);
    EXPECT_NE(ir.find("vector.maskedload"), std::string::npos) << isa.name << "\n" << ir;
    EXPECT_NE(ir.find("vector.maskedstore"), std::string::npos) << isa.name << "\n" << ir;
    EXPECT_NE(ir.find("vector<16xf32>"), std::string::npos) << isa.name << "\n" << ir;
    EXPECT_EQ(ir.find("linalg.copy"), std::string::npos) << isa.name << "\n" << ir;
    // 300 f32 columns: 18 whole vectors (a loop over them), 12 masked.
    ir = concat_case<float>(DType::kF32, 5, 300, 5, isa);
    EXPECT_NE(ir.find("vector.maskedstore"), std::string::npos) << isa.name << "\n" << ir;
    // bf16: 32 lanes; 64 columns are two whole vectors and no mask.
    ir = concat_case<uint16_t>(DType::kBF16, 9, 45, 64, isa);
    EXPECT_NE(ir.find("vector<32xbf16>"), std::string::npos) << isa.name << "\n" << ir;
  }
}

}  // namespace
}  // namespace radix
