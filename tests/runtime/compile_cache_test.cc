// Platform::compile with the on-disk executable cache (CompileOptions::
// cache_dir), the dump folder layout, and compiling one traced module from
// several threads at once.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "radix/runtime/executable_cache.h"
#include "test_util.h"

namespace radix {
namespace {

namespace fs = std::filesystem;
using testing::cpu;
using testing::must;

// y = tanh(x @ w) + 1 over f32[8,16] x f32[16,4]: traced afresh each time.
TracedModule trace_program(const std::string& name = "cached") {
  TraceOptions to;
  to.name = name;
  Shape xs(DType::kF32, {8, 16}), ws(DType::kF32, {16, 4});
  return must(trace(to, {xs, ws}, {"x", "w"}, 0, [](std::span<const Tensor> in) {
    return std::vector<Tensor>{tanh(matmul(in[0], in[1])) + 1.0};
  }));
}

std::vector<float> run_program(const Executable& exe) {
  std::vector<float> x = testing::random_vec<float>(8 * 16, -1, 1, 3), w = testing::random_vec<float>(16 * 4, -1, 1, 4);
  Buffer xb = must(cpu().buffer(Shape(DType::kF32, {8, 16}), x));
  Buffer wb = must(cpu().buffer(Shape(DType::kF32, {16, 4}), w));
  std::vector<Buffer> out = must(exe.call({xb, wb}));
  return must(out[0].to_host<float>());
}

// Naive reference of the program above.
std::vector<float> reference() {
  std::vector<float> x = testing::random_vec<float>(8 * 16, -1, 1, 3), w = testing::random_vec<float>(16 * 4, -1, 1, 4);
  std::vector<float> y(8 * 4);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 16; ++k) acc += double(x[i * 16 + k]) * w[k * 4 + j];
      y[i * 4 + j] = static_cast<float>(std::tanh(acc) + 1.0);
    }
  return y;
}

class CompileCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("radix-compile-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    opts_.cache_dir = (dir_ / "cache").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  CompileOptions opts_;
};

// Polynomial tanh: a few ulp; f32 sums of 16 products: 1e-5 covers both.
constexpr double kTol = 1e-5;

TEST_F(CompileCache, MissStoresThenANewTraceHitsWithoutCompiling) {
  Executable first = must(cpu().compile(trace_program(), opts_));
  EXPECT_EQ(first.stats().cache, CompileStats::Cache::kMiss);
  EXPECT_GT(first.stats().lower_ms, 0);
  EXPECT_TRUE(fs::exists(first.stats().cache_entry)) << first.stats().cache_entry;
  Executable second = must(cpu().compile(trace_program(), opts_));
  EXPECT_EQ(second.stats().cache, CompileStats::Cache::kHit);
  EXPECT_EQ(second.stats().lower_ms, 0) << "a hit runs no pipeline";
  EXPECT_EQ(second.stats().cache_entry, first.stats().cache_entry);
  EXPECT_TRUE(testing::all_close(run_program(second), reference(), kTol, kTol));
  EXPECT_EQ(run_program(second), run_program(first)) << "the stored object is the compiled one";
}

TEST_F(CompileCache, KeyCoversCodegenOptionsNotDiagnostics) {
  TracedModule m = trace_program();
  const std::string base = must(cpu().cache_key(m, opts_));
  EXPECT_EQ(base.size(), 16u);
  EXPECT_EQ(must(cpu().cache_key(trace_program(), opts_)), base) << "a re-trace is the same program";
  CompileOptions diag = opts_;
  diag.diagnostics.verbose = true;
  diag.diagnostics.dump = {"traced"};
  diag.diagnostics.dump_dir = (dir_ / "dumps").string();
  EXPECT_EQ(must(cpu().cache_key(m, diag)), base);
  for (auto change : std::vector<std::function<void(CompileOptions&)>>{
           [](CompileOptions& o) { o.codegen.opt_level = 1; },
           [](CompileOptions& o) { o.codegen.cpu.vectorize = false; },
           [](CompileOptions& o) { o.codegen.cpu.approximate_math = false; },
           [](CompileOptions& o) { o.codegen.cpu.schedule_isa = {4, 16}; },
           [](CompileOptions& o) { o.codegen.target_cpu = "x86-64"; }}) {
    CompileOptions o = opts_;
    change(o);
    EXPECT_NE(must(cpu().cache_key(m, o)), base);
  }
  EXPECT_NE(must(cpu().cache_key(trace_program("other_name"), opts_)), base) << "the name is in the module";
}

TEST_F(CompileCache, AnEntryTheBackendCannotLoadIsRejectedAndReplaced) {
  // A well-formed entry (right header and checksum) whose payload is not an
  // object: only the backend's load can tell, and it must not be trusted.
  TracedModule m = trace_program();
  uint64_t key = std::stoull(must(cpu().cache_key(m, opts_)), nullptr, 16);
  ASSERT_TRUE(ExecutableCache(opts_.cache_dir).store(key, "this is not an ELF object").ok());
  Executable exe = must(cpu().compile(m, opts_));
  EXPECT_EQ(exe.stats().cache, CompileStats::Cache::kRejected);
  EXPECT_TRUE(testing::all_close(run_program(exe), reference(), kTol, kTol));
  EXPECT_EQ(must(cpu().compile(m, opts_)).stats().cache, CompileStats::Cache::kHit);
}

TEST_F(CompileCache, UnwritableCacheFolderStillCompiles) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  opts_.cache_dir = (dir_ / "file" / "cache").string();  // under a regular file
  Executable exe = must(cpu().compile(trace_program(), opts_));
  EXPECT_TRUE(testing::all_close(run_program(exe), reference(), kTol, kTol));
}

TEST_F(CompileCache, DumpFolderIsBackendThenNameAndKey) {
  CompileOptions o;
  o.diagnostics.dump_dir = (dir_ / "dumps").string();
  o.diagnostics.dump = {"lower"};
  TracedModule m = trace_program("dumped");
  Executable exe = must(cpu().compile(m, o));
  fs::path folder = dir_ / "dumps" / "cpu" / ("dumped_" + must(cpu().cache_key(m, o)));
  EXPECT_EQ(exe.stats().dump_folder, folder.string());
  std::ifstream module(folder / "module.mlir");
  std::string text((std::istreambuf_iterator<char>(module)), {});
  EXPECT_NE(text.find("func.func @main"), std::string::npos) << folder;
  EXPECT_NE(testing::stage_dump(dir_ / "dumps", "lower.mlir").find("llvm.func"), std::string::npos);
}

TEST(CompileThreads, OneTracedModuleFromSeveralThreadsAtOnce) {
  TracedModule m = trace_program();
  const std::string before = m.to_string();
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      CompileOptions o;
      o.codegen.opt_level = t % 2 ? 3 : 1;
      auto exe = cpu().compile(m, o);
      if (!exe.ok()) { errors[t] = exe.status().to_string(); return; }
      results[t] = run_program(*exe);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "");
    EXPECT_TRUE(testing::all_close(results[t], reference(), kTol, kTol)) << "thread " << t;
  }
  EXPECT_EQ(m.to_string(), before) << "compiling must not modify the traced module";
}

TEST(CompileOptionsCheck, BadOptionsNameTheField) {
  TracedModule m = trace_program();
  auto expect_error = [&](CompileOptions o, const std::string& needle) {
    auto r = cpu().compile(m, o);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  CompileOptions o;
  o.codegen.target_cpu = "pentium-9000";
  expect_error(o, "target_cpu: unknown CPU 'pentium-9000'");
  o = {};
  o.codegen.opt_level = 7;
  expect_error(o, "opt_level must be 0..3, got 7");
}

}  // namespace
}  // namespace radix
