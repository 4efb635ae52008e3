// The named lowering stages: each can be dumped, each leaves the IR in the
// dialects it promises, and the vectorized and scalar paths agree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "radix/backends/cpu/cpu_pipelines.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;
namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Pipeline, StagesAreNamedInOrder) {
  std::vector<std::string> names;
  for (const auto& s : cpu_pipeline_stages()) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"partition", "collectives", "custom-calls", "dps", "fuse", "schedule", "bufferize", "math",
                                             "lower"}));
  const auto& known = cpu_stage_names();
  EXPECT_NE(std::find(known.begin(), known.end(), "llvm-ir"), known.end());
  EXPECT_NE(std::find(known.begin(), known.end(), "traced"), known.end());
  CompileOptions bad;
  bad.diagnostics.dump = {"optimize"};
  Status st = cpu().backend()->check_options(bad);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("unknown stage 'optimize'"), std::string::npos) << st.message();
}

TEST(Pipeline, DumpsEveryStageToAFolder) {
  fs::path dir = fs::temp_directory_path() / ("radix-dump-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CompileFnOptions o;
  o.compile.diagnostics.dump = {"all"};
  o.compile.diagnostics.dump_dir = dir.string();
  Shape s(DType::kF32, {32, 64});
  auto exe = must(compile_fn(cpu(), o, [](Tensor a, Tensor b) { return exp(a) * b + 1.0; }, s, s));
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string name = e.path().filename().string();
    if (name == "module.mlir") continue;
    files[name.substr(3)] = read_file(e.path());  // strip the "NN-" order prefix
  }
  for (const char* f : {"traced.mlir", "dps.mlir", "fuse.mlir", "schedule-script.mlir", "schedule.mlir",
                        "bufferize.mlir", "math.mlir", "lower.mlir", "llvm-ir.ll", "asm.s"})
    EXPECT_TRUE(files.count(f)) << "missing dump " << f;
  // Each stage leaves the IR where it says.
  EXPECT_NE(files["traced.mlir"].find("linalg.generic"), std::string::npos);
  EXPECT_NE(files["dps.mlir"].find("bufferization.materialize_in_destination"), std::string::npos);
  EXPECT_NE(files["dps.mlir"].find("llvm.emit_c_interface"), std::string::npos);
  // exp, mul and add fuse into one generic.
  size_t generics = 0;
  for (size_t p = files["fuse.mlir"].find("linalg.generic"); p != std::string::npos;
       p = files["fuse.mlir"].find("linalg.generic", p + 1))
    ++generics;
  EXPECT_EQ(generics, 1u) << files["fuse.mlir"];
  EXPECT_NE(files["schedule-script.mlir"].find("transform.structured.vectorize"), std::string::npos);
  EXPECT_NE(files["schedule-script.mlir"].find("// schedule: 0 matmuls (0 packed), 1 elementwise"), std::string::npos)
      << files["schedule-script.mlir"];
  EXPECT_NE(files["schedule.mlir"].find("vector<16xf32>"), std::string::npos) << files["schedule.mlir"];
  EXPECT_NE(files["bufferize.mlir"].find("memref<32x64xf32>"), std::string::npos);
  EXPECT_EQ(files["bufferize.mlir"].find("tensor<"), std::string::npos);
  // exp became a polynomial (no math.exp left) before lowering.
  EXPECT_EQ(files["math.mlir"].find("math.exp"), std::string::npos) << files["math.mlir"];
  EXPECT_NE(files["bufferize.mlir"].find("math.exp"), std::string::npos);
  EXPECT_NE(files["lower.mlir"].find("llvm.func @_mlir_ciface_main"), std::string::npos);
  // The C wrapper and main are inlined into the packed entry, the only export.
  EXPECT_NE(files["llvm-ir.ll"].find("define void @_radix_packed_main"), std::string::npos);
  // The native code: the entry's label and the polynomial's vector FMAs.
  EXPECT_NE(files["asm.s"].find("_radix_packed_main:"), std::string::npos);
  EXPECT_NE(files["asm.s"].find("vfmadd"), std::string::npos) << files["asm.s"].substr(0, 2000);
  fs::remove_all(dir);
}

TEST(Pipeline, ScalarAndVectorizedPathsAgree) {
  const int64_t M = 48, N = 64, K = 40;
  Shape a(DType::kF32, {M, K}), b(DType::kF32, {K, N});
  std::vector<float> x = testing::random_vec<float>(M * K, -1, 1, 1), y = testing::random_vec<float>(K * N, -1, 1, 2);
  std::vector<float> want(M * N, 0.f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += double(x[i * K + k]) * y[k * N + j];
      want[i * N + j] = std::tanh(static_cast<float>(acc));
    }
  for (bool vec : {false, true}) {
    CompileFnOptions o;
    o.compile.codegen.cpu.vectorize = vec;
    auto exe = must(compile_fn(cpu(), o, [](Tensor p, Tensor q) { return tanh(matmul(p, q)); }, a, b));
    Buffer out = must(exe.call(must(cpu().buffer(a, x)), must(cpu().buffer(b, y))));
    // f32 accumulation of 40 products vs a double reference, through tanh.
    EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 1e-6)) << "vectorize=" << vec;
  }
}

}  // namespace
}  // namespace radix
