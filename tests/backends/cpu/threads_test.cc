// Threads (CpuOptions::threads; regions on Radix's fork / join pool): every op kind the
// schedule splits over threads gives bit-identical results on 1, 2 and 3
// threads (work is split over output tiles only, so every sum adds in the same
// order), matches a plain-loop reference, and really runs as an OpenMP
// parallel region, each thread on its static share of the tiles (3 threads:
// shares of unequal size). Several executables called at once never hold more cores
// than the process has (CoreBudget).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <regex>
#include <thread>

#include "radix/backends/cpu/cpu_threads.h"
#include "radix/nn/norm.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;
namespace fs = std::filesystem;

struct Compiled {
  std::vector<float> out;
  std::string script, llvm_ir;
};

// Compiles `fn` on `threads` threads (with `isa`'s tiling when given, else
// the host's), runs it on seeded inputs and returns the output with the
// schedule script and LLVM IR.
template <class Fn>
Compiled run_on(int threads, Fn fn, const std::vector<Shape>& shapes, const testing::IsaCase* isa = nullptr) {
  fs::path dir = fs::temp_directory_path() / ("radix-threads-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(threads));
  fs::remove_all(dir);
  CompileFnOptions o;
  o.compile.codegen.cpu.threads = threads;
  if (isa) o.compile.codegen.cpu.schedule_isa = isa->isa;
  o.compile.diagnostics.dump = {"schedule-script", "llvm-ir"};
  o.compile.diagnostics.dump_dir = dir.string();
  std::vector<Buffer> args;
  for (size_t i = 0; i < shapes.size(); ++i)
    args.push_back(must(cpu().buffer(shapes[i], testing::random_vec<float>(static_cast<size_t>(shapes[i].count()),
                                                                          -1, 1, 100 + static_cast<uint32_t>(i)))));
  Compiled c;
  if constexpr (requires { fn(Tensor()); }) {
    auto exe = must(compile_fn(cpu(), o, fn, shapes[0]));
    c.out = must(must(exe.call(args[0])).template to_host<float>());
  } else {
    auto exe = must(compile_fn(cpu(), o, fn, shapes[0], shapes[1]));
    c.out = must(must(exe.call(args[0], args[1])).template to_host<float>());
  }
  c.script = testing::stage_dump(dir, "schedule-script.mlir");
  c.llvm_ir = testing::stage_dump(dir, "llvm-ir.ll");
  fs::remove_all(dir);
  return c;
}

// 1 thread: no forall, no OpenMP call; 2 and 3 threads: both, and the same
// bits as 1 thread.
template <class Fn>
std::vector<float> expect_thread_independent(const char* what, Fn fn, const std::vector<Shape>& shapes) {
  Compiled one = run_on(1, fn, shapes);
  EXPECT_EQ(one.script.find("tile_using_forall"), std::string::npos) << what;
  EXPECT_EQ(one.llvm_ir.find("__kmpc_fork_call"), std::string::npos) << what;
  for (int t : {2, 3}) {
    Compiled many = run_on(t, fn, shapes);
    EXPECT_NE(many.script.find("tile_using_forall"), std::string::npos) << what << " on " << t << " threads";
    EXPECT_NE(many.llvm_ir.find("__kmpc_fork_call"), std::string::npos) << what << " on " << t << " threads";
    // radix-omp-static-chunks: each thread's share computed in the loop's
    // own code, no worksharing-loop calls into libomp.
    EXPECT_NE(many.llvm_ir.find("@omp_get_thread_num"), std::string::npos) << what << " on " << t << " threads";
    EXPECT_EQ(many.llvm_ir.find("__kmpc_for_static_init"), std::string::npos) << what << " on " << t << " threads";
    EXPECT_EQ(many.out, one.out) << what << ": " << t << " threads differ from 1";
  }
  return one.out;
}

std::vector<double> naive_dot(const std::vector<float>& a, const std::vector<float>& b, int64_t M, int64_t N,
                              int64_t K, bool b_nk) {
  std::vector<double> c(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        c[static_cast<size_t>(i * N + j)] += double(a[static_cast<size_t>(i * K + k)]) *
                                             b[static_cast<size_t>(b_nk ? j * K + k : k * N + j)];
  return c;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << what << " at " << i;
}

// matmul(A[M,K], B[K,N]) on 1..N threads, against a double loop.
void check_matmul_threads(const char* what, int64_t M, int64_t N, int64_t K) {
  Shape a(DType::kF32, {M, K}), b(DType::kF32, {K, N});
  auto got = expect_thread_independent(what, [](Tensor x, Tensor y) { return matmul(x, y); }, {a, b});
  expect_near(got, naive_dot(testing::random_vec<float>(M * K, -1, 1, 100), testing::random_vec<float>(K * N, -1, 1, 101),
                             M, N, K, false),
              1e-4, what);
}

TEST(Threads, PackedMatmulIsThreadCountIndependent) {
  check_matmul_threads("packed matmul", 256, 256, 256);  // the packed schedule (M*N*K >= 2^24)
}

// 200 rows: two 96-row blocks of 6-row tiles, then 8 rows of 4-row tiles
// (a second parallel loop); 48-row blocks on two threads.
TEST(Threads, SplitPackedMatmulIsThreadCountIndependent) { check_matmul_threads("split packed matmul", 200, 256, 384); }

TEST(Threads, RegisterTiledMatmulIsThreadCountIndependent) { check_matmul_threads("matmul", 96, 80, 72); }

// 129^3 on two threads: the loop split is the one that divides into whole
// rounds of chunks. AVX2's tiling: 126 rows of 6-row tiles (21 tiles: 3 or 7
// chunks, a thread idle in the last round) and 128 columns of 16 (2 chunks):
// two threads take half the columns each, the rows stay whole. AVX-512's:
// 128 rows of 8-row tiles, two chunks of 64 rows. Each tiling gives the same
// bits on one, two and three threads, against a double loop.
TEST(Threads, OddMatmulSplitsTheLoopThatDividesEvenly) {
  check_matmul_threads("matmul 129^3", 129, 129, 129);
  const std::regex rows_split(R"(tile_using_forall %\w+ tile_sizes \[[1-9]\d*, 0, 0\])");
  const std::regex rows_in_two(R"(tile_using_forall %\w+ tile_sizes \[64, 0, 0\])");
  const std::regex cols_in_two(R"(tile_using_forall %\w+ tile_sizes \[0, 64, 0\])");
  const std::vector<Shape> shapes = {Shape(DType::kF32, {129, 129}), Shape(DType::kF32, {129, 129})};
  auto mm = [](Tensor x, Tensor y) { return matmul(x, y); };
  for (const testing::IsaCase& isa : {testing::kIsas[1], testing::kIsas[2]}) {
    SCOPED_TRACE(isa.name);
    Compiled two = run_on(2, mm, shapes, &isa);
    Compiled one = run_on(1, mm, shapes, &isa);
    EXPECT_EQ(two.out, one.out);
    const bool avx2 = std::string(isa.name) == "avx2";
    EXPECT_EQ(std::regex_search(two.script, rows_split), !avx2) << two.script;
    EXPECT_EQ(std::regex_search(two.script, rows_in_two), !avx2) << two.script;
    EXPECT_EQ(std::regex_search(two.script, cols_in_two), avx2) << two.script;
  }
}

TEST(Threads, MatVecWithWeightsOutInIsThreadCountIndependent) {
  const int64_t N = 1024, K = 512;
  Shape x(DType::kF32, {1, K}), w(DType::kF32, {N, K});
  auto got = expect_thread_independent(
      "x . w^T", [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, {x, w});
  expect_near(got, naive_dot(testing::random_vec<float>(K, -1, 1, 100), testing::random_vec<float>(N * K, -1, 1, 101),
                             1, N, K, true),
              1e-4, "x . w^T");
}

// A decode-sized mat-vec (stories15M's [1,288]·W[768,288]ᵀ: 221K multiply-
// adds, reading 864 KiB of weights) splits over threads too, and so does
// the same product with W stored [288, 768]; the same work with 16 rows
// reuses each weight row from cache and stays on one core.
TEST(Threads, SmallDecodeMatVecsSplitButSmallPromptProductsDoNot) {
  const int64_t N = 768, K = 288;
  Shape x(DType::kF32, {1, K}), w(DType::kF32, {N, K});
  auto dot = [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); };
  auto got = expect_thread_independent("[1,288] . w[768,288]^T", dot, {x, w});
  expect_near(got, naive_dot(testing::random_vec<float>(K, -1, 1, 100), testing::random_vec<float>(N * K, -1, 1, 101),
                             1, N, K, true),
              1e-4, "[1,288] . w^T");
  Compiled rows = run_on(2, dot, {Shape(DType::kF32, {16, 64}), Shape(DType::kF32, {192, 64})});
  EXPECT_EQ(rows.script.find("tile_using_forall"), std::string::npos) << rows.script;
  // The same mat-vec with W stored [K, N] (register tiles, not dot products).
  auto mm = [](Tensor a, Tensor b) { return matmul(a, b); };
  auto kn = expect_thread_independent("[1,288] . w[288,768]", mm, {x, Shape(DType::kF32, {K, N})});
  expect_near(kn, naive_dot(testing::random_vec<float>(K, -1, 1, 100), testing::random_vec<float>(K * N, -1, 1, 101),
                            1, N, K, false),
              1e-4, "[1,288] . w");
  Compiled kn_rows = run_on(2, mm, {Shape(DType::kF32, {16, 64}), Shape(DType::kF32, {64, 192})});
  EXPECT_EQ(kn_rows.script.find("tile_using_forall"), std::string::npos) << kn_rows.script;
}

// Decode attention's probabilities times V: 12 heads of [1,64]·V[64,64]
// (stories110M, one 64-position chunk of the cache) stream V as a mat-vec
// streams its weights, so the batch splits over threads at a mat-vec's work
// (49K multiply-adds); 3 heads of 16 query rows (196K, reusing each V row
// from cache) stay on one core below a matmul's 256K.
TEST(Threads, DecodeAttentionTimesVSplitsOverHeads) {
  const int64_t H = 12, T = 64, D = 64;
  auto pv = [](Tensor p, Tensor v) { return dot_general(p, v, DotDims{{0}, {0}, {2}, {1}}); };
  auto got = expect_thread_independent("p[12,1,64] . v[12,64,64]", pv,
                                       {Shape(DType::kF32, {H, 1, T}), Shape(DType::kF32, {H, T, D})});
  const std::vector<float> p = testing::random_vec<float>(H * T, -1, 1, 100), v = testing::random_vec<float>(H * T * D, -1, 1, 101);
  std::vector<double> want;
  for (int64_t h = 0; h < H; ++h) {
    std::vector<float> ph(p.begin() + h * T, p.begin() + (h + 1) * T), vh(v.begin() + h * T * D, v.begin() + (h + 1) * T * D);
    std::vector<double> c = naive_dot(ph, vh, 1, D, T, false);
    want.insert(want.end(), c.begin(), c.end());
  }
  expect_near(got, want, 1e-4, "p . v");
  Compiled rows = run_on(2, pv, {Shape(DType::kF32, {3, 16, T}), Shape(DType::kF32, {3, T, D})});
  EXPECT_EQ(rows.script.find("tile_using_forall"), std::string::npos) << rows.script;
}

TEST(Threads, ElementwiseAndRowReductionsAreThreadCountIndependent) {
  Shape s(DType::kF32, {192, 1024}, {"r", "c"});
  expect_thread_independent("elementwise", [](Tensor a) { return relu(a * a + 1.0) * 0.5 - a; }, {s});
  auto got = expect_thread_independent("softmax", [](Tensor a) { return softmax(a, "c"); }, {s});
  expect_thread_independent("rms_norm", [](Tensor a) { return nn::rms_norm(a, -1, 1e-5); }, {s});
  // Each row of a softmax sums to 1.
  for (int64_t r = 0; r < 192; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 1024; ++c) sum += got[static_cast<size_t>(r * 1024 + c)];
    ASSERT_NEAR(sum, 1.0, 1e-4) << "row " << r;
  }
  expect_thread_independent("column sums", [](Tensor a) { return reduce_sum(a, {0}); },
                            {Shape(DType::kF32, {64, 4096})});
}

// A row-fusion group's row buffers live on the stack: a thread keeps one
// set for all its rows. 2048 rows of 16 KiB each (32 MiB of buffers if
// every row kept its own: more than any thread's stack) on 1-3 threads,
// each row's softmax summing to 1 and its largest entry where the input's is.
TEST(Threads, RowFusionOverManyRowsKeepsOneRowBufferPerThread) {
  const int64_t R = 2048, C = 4096;
  auto got = expect_thread_independent("softmax", [](Tensor a) { return softmax(a, -1); },
                                       {Shape(DType::kF32, {R, C})});
  const std::vector<float> in = testing::random_vec<float>(static_cast<size_t>(R * C), -1, 1, 100);
  for (int64_t r = 0; r < R; r += 97) {
    const float* row = got.data() + r * C;
    const float* x = in.data() + r * C;
    double sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += row[c];
    ASSERT_NEAR(sum, 1.0, 1e-4) << "row " << r;
    EXPECT_EQ(std::max_element(row, row + C) - row, std::max_element(x, x + C) - x) << "row " << r;
  }
}

TEST(Threads, OptionIsCheckedAndPartOfTheCacheKey) {
  CompileOptions bad;
  bad.codegen.cpu.threads = -1;
  Status st = cpu().backend()->check_options(bad);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("codegen.cpu.threads"), std::string::npos) << st.message();
  CompileOptions one, two;
  one.codegen.cpu.threads = 1;
  two.codegen.cpu.threads = 2;
  EXPECT_NE(cpu().backend()->codegen_fingerprint(one), cpu().backend()->codegen_fingerprint(two));
  EXPECT_GE(resolve_cpu_threads(0), 1);
  EXPECT_EQ(resolve_cpu_threads(3), 3);
}

// Four application threads call two threaded executables at once: results
// stay right and the cores held never exceed the process's.
TEST(Threads, ConcurrentCallsNeverOversubscribe) {
  Shape s(DType::kF32, {256, 1024});
  CompileFnOptions o;
  o.compile.codegen.cpu.threads = 0;  // every core
  auto square = must(compile_fn(cpu(), o, [](Tensor a) { return a * a; }, s));
  auto twice = must(compile_fn(cpu(), o, [](Tensor a) { return a + a; }, s));
  std::vector<float> x = testing::random_vec<float>(static_cast<size_t>(s.count()), -2, 2, 7);
  Buffer xb = must(cpu().buffer(s, x));
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&, w] {
      for (int i = 0; i < 20; ++i) {
        auto out = (w % 2 ? square : twice).call(xb);
        if (!out.ok()) {
          ++wrong;
          continue;
        }
        std::vector<float> y = out->to_host<float>().value();
        for (size_t j = 0; j < y.size(); j += 97)
          if (y[j] != (w % 2 ? x[j] * x[j] : x[j] + x[j])) ++wrong;
      }
    });
  for (auto& t : workers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  CoreBudget& budget = CoreBudget::process();
  EXPECT_LE(budget.peak(), budget.cores());
  EXPECT_GE(budget.peak(), 1);
}

TEST(Threads, CoreBudgetWaitsForFreeCores) {
  CoreBudget b(2);
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 6; ++i)
    ts.emplace_back([&, i] {
      CoreBudget::Hold h(b, 1 + i % 2);
      int now = (inside += 1 + i % 2);
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {}
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      inside -= 1 + i % 2;
    });
  for (auto& t : ts) t.join();
  EXPECT_LE(most.load(), 2);
  EXPECT_EQ(b.peak(), 2);
  EXPECT_EQ(b.acquire(99), 2);  // clamped to the budget
  b.release(2);
}

}  // namespace
}  // namespace radix
