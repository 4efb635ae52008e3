// Outputs written with non-temporal stores (the "radix-streaming-stores"
// pass, CpuOptions::streaming_store_bytes): the stores appear in the native
// code where an output is only written, the results are bit for bit those
// of normal stores and match naive loops, on every ISA's tiling and thread
// count, for rows that start aligned and rows that do not.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "radix/nn/norm.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;
namespace fs = std::filesystem;

using testing::IsaCase;
using testing::kIsas;

struct Compiled {
  std::vector<float> out;
  std::string assembly;  // or the dump of the stage run() was asked for
};

// fn(x, y) compiled with the given threshold, ISA and threads, called once
// on (a, b); its output and the native code's assembly (or `stage`'s dump,
// by its file name).
template <class Fn>
Compiled run(Fn fn, int64_t stream_bytes, const IsaCase& isa, int threads, const Shape& sa, const Shape& sb,
             const std::vector<float>& a, const std::vector<float>& b, const std::string& stage = "asm") {
  const fs::path dir = fs::temp_directory_path() / ("radix-stream-" + std::to_string(::getpid()));
  CompileFnOptions o = testing::isa_options(isa, threads, {stage}, dir);
  o.compile.codegen.cpu.streaming_store_bytes = stream_bytes;
  auto exe = must(compile_fn(cpu(), o, fn, sa, sb));
  EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
  Buffer out = must(exe.call(must(cpu().buffer(sa, a)), must(cpu().buffer(sb, b))));
  Compiled c{must(out.to_host<float>()), testing::stage_dump(dir, stage == "asm" ? "asm.s" : stage + ".mlir")};
  fs::remove_all(dir);
  return c;
}

bool has_nontemporal_store(const std::string& assembly) { return assembly.find("movnt") != std::string::npos; }

bool is_x86() {
#if defined(__x86_64__) || defined(__i386__)
  return true;
#else
  return false;
#endif
}

// Streams (threshold 1 byte) and does not (threshold 0) and compares: the
// same bits, the reference within `tol` (max |got - want| / max(|want|, 1)).
// `streams`: whether the pass takes the output at all (loops that evaluate
// a transcendental function keep normal stores).
template <class Fn>
void check_streamed(const char* what, Fn fn, int64_t rows, int64_t cols, bool second_is_row,
                    const std::function<std::vector<double>(const std::vector<float>&, const std::vector<float>&)>& ref,
                    double tol, bool streams = true) {
  const Shape sa(DType::kF32, {rows, cols});
  const Shape sb = second_is_row ? Shape(DType::kF32, {cols}) : sa;
  const std::vector<float> a = testing::random_vec<float>(size_t(sa.count()), -2, 2, 21);
  const std::vector<float> b = testing::random_vec<float>(size_t(sb.count()), 0.5, 1.5, 22);
  const std::vector<double> want = ref(a, b);
  for (const IsaCase& isa : kIsas)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(what) + " [" + std::to_string(rows) + ", " + std::to_string(cols) + "] " + isa.name +
                   " on " + std::to_string(threads) + " threads");
      const Compiled streamed = run(fn, 1, isa, threads, sa, sb, a, b);
      const Compiled plain = run(fn, 0, isa, threads, sa, sb, a, b);
      EXPECT_EQ(has_nontemporal_store(streamed.assembly), is_x86() && streams);
      // Rows that only 16 bytes align: pieces of 16 bytes (an xmm each).
      if (is_x86() && streams && cols % 16 != 0)
        EXPECT_NE(streamed.assembly.find("movntps\t%xmm"), std::string::npos);
      // One sfence per thread's share (or at the end) orders the stores.
      if (is_x86() && streams) EXPECT_NE(streamed.assembly.find("sfence"), std::string::npos);
      EXPECT_FALSE(has_nontemporal_store(plain.assembly));
      // No write prefetch pulls the streamed lines into the cache.
      if (is_x86() && streams) EXPECT_EQ(streamed.assembly.find("prefetchw"), std::string::npos);
      if (!streams) EXPECT_EQ(streamed.assembly.find("sfence"), std::string::npos);
      ASSERT_EQ(streamed.out.size(), want.size());
      EXPECT_EQ(streamed.out, plain.out);
      double err = 0;
      for (size_t i = 0; i < want.size(); ++i)
        err = std::max(err, std::abs(streamed.out[i] - want[i]) / std::max(std::abs(want[i]), 1.0));
      EXPECT_LT(err, tol);
    }
}

std::vector<double> rms_ref(const std::vector<float>& x, const std::vector<float>& g, int64_t cols) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size_t(cols); ++r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += double(x[r * cols + c]) * x[r * cols + c];
    const double s = 1 / std::sqrt(ss / double(cols) + 1e-6);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * s * g[size_t(c)];
  }
  return y;
}

std::vector<double> softmax_ref(const std::vector<float>& x, int64_t cols) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size_t(cols); ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, double(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) sum += y[r * cols + c] = std::exp(double(x[r * cols + c]) - mx);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] /= sum;
  }
  return y;
}

// [64, 4096]: every row starts 64-byte aligned. [37, 100] and [37, 300]:
// rows start 400 / 1200 bytes apart, so the run-time alignment check takes
// every way within one call (whole vectors, 16-byte pieces), and each row
// ends in a rest after its last whole 16 (4 and 12 values), in vectors too.
const std::pair<int64_t, int64_t> kShapes[] = {{64, 4096}, {37, 100}, {37, 300}};

TEST(StreamingStores, RmsNormOutputIsStreamedWithTheSameBits) {
  for (auto [rows, cols] : kShapes)
    check_streamed(
        "rms_norm", [](Tensor x, Tensor g) { return nn::rms_norm(x, g, -1, 1e-6); }, rows, cols, true,
        [cols = cols](const std::vector<float>& x, const std::vector<float>& g) { return rms_ref(x, g, cols); }, 1e-5);
}

// Softmax's row loop evaluates exp: its output keeps normal stores (faster
// there, see streaming_stores_pass.cc), whatever the threshold.
TEST(StreamingStores, SoftmaxOutputKeepsNormalStores) {
  // The f32 exp approximation: a few ulp (math_approximation_test).
  for (auto [rows, cols] : kShapes)
    check_streamed(
        "softmax", [](Tensor x, Tensor g) { return softmax(x * g, -1); }, rows, cols, true,
        [cols = cols](const std::vector<float>& x, const std::vector<float>& g) {
          std::vector<float> xg(x.size());
          for (size_t i = 0; i < x.size(); ++i) xg[i] = x[i] * g[i % size_t(cols)];
          return softmax_ref(xg, cols);
        },
        1e-5, /*streams=*/false);
}

// Elementwise alike: x * sigmoid(x) (SiLU, exp inside) keeps normal stores,
// the light chain below is streamed.
TEST(StreamingStores, TranscendentalElementwiseOutputKeepsNormalStores) {
  for (auto [rows, cols] : kShapes)
    check_streamed(
        "silu", [](Tensor a, Tensor b) { return a * sigmoid(a * b); }, rows, cols, false,
        [](const std::vector<float>& a, const std::vector<float>& b) {
          std::vector<double> y(a.size());
          for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] / (1 + std::exp(-double(a[i] * b[i])));
          return y;
        },
        1e-5, /*streams=*/false);
}

TEST(StreamingStores, ElementwiseOutputIsStreamedWithTheSameBits) {
  for (auto [rows, cols] : kShapes)
    check_streamed(
        "elementwise", [](Tensor a, Tensor b) { return relu(a * b + a) * 0.5f - a; }, rows, cols, false,
        [](const std::vector<float>& a, const std::vector<float>& b) {
          std::vector<double> y(a.size());
          for (size_t i = 0; i < a.size(); ++i) y[i] = std::max(double(a[i] * b[i] + a[i]), 0.0) * 0.5 - a[i];
          return y;
        },
        1e-6);
}

// With threads, the fence runs once per thread after its share of the
// rows, not once per row: [20000, 32] has 20000 parallel iterations of 128
// bytes (a fence each made softmax 2.7x slower than normal stores).
TEST(StreamingStores, OneFencePerThreadNotPerIteration) {
  if (!is_x86()) GTEST_SKIP() << "non-temporal stores are x86 only";
  const Shape s(DType::kF32, {20000, 32}), sg(DType::kF32, {32});
  const std::vector<float> x = testing::random_vec<float>(size_t(s.count()), -2, 2, 27);
  const std::vector<float> g = testing::random_vec<float>(size_t(sg.count()), 0.5, 1.5, 28);
  auto fn = [](Tensor t, Tensor w) { return nn::rms_norm(t, w, -1, 1e-6); };
  const Compiled streamed = run(fn, 1, kIsas[2], 2, s, sg, x, g, "lower");
  const Compiled plain = run(fn, 0, kIsas[2], 2, s, sg, x, g, "lower");
  EXPECT_EQ(streamed.out, plain.out);
  ASSERT_NE(plain.assembly.find("omp.parallel"), std::string::npos) << plain.assembly;
  EXPECT_EQ(plain.assembly.find("llvm.x86.sse.sfence"), std::string::npos) << plain.assembly;
  const std::string& ir = streamed.assembly;
  ASSERT_NE(ir.find("omp.parallel"), std::string::npos) << ir;
  const size_t fence = ir.find("llvm.x86.sse.sfence");
  ASSERT_NE(fence, std::string::npos) << ir;
  EXPECT_EQ(ir.find("llvm.x86.sse.sfence", fence + 1), std::string::npos) << "one fence expected\n" << ir;
  // The fence is the parallel region's last op: after the thread's loop.
  const size_t from = ir.find('\n', fence) + 1;
  std::string next = ir.substr(from, ir.find('\n', from) - from);
  next.erase(0, next.find_first_not_of(' '));
  EXPECT_EQ(next.rfind("omp.terminator", 0), size_t{0}) << ir;
}

// Products read C back while they accumulate it: whatever the pass leaves
// alone or streams, the results are the same bits.
TEST(StreamingStores, MatmulResultsDoNotDependOnTheThreshold) {
  struct Mkn {
    int64_t m, k, n;
  };
  for (Mkn d : {Mkn{96, 80, 72}, Mkn{256, 256, 256}}) {
    const Shape sa(DType::kF32, {d.m, d.k}), sb(DType::kF32, {d.k, d.n});
    const std::vector<float> a = testing::random_vec<float>(size_t(d.m * d.k), -1, 1, 23);
    const std::vector<float> b = testing::random_vec<float>(size_t(d.k * d.n), -1, 1, 24);
    for (int threads : {1, 2}) {
      auto mm = [](Tensor x, Tensor y) { return matmul(x, y); };
      const Compiled streamed = run(mm, 1, kIsas[2], threads, sa, sb, a, b);
      const Compiled plain = run(mm, 0, kIsas[2], threads, sa, sb, a, b);
      EXPECT_EQ(streamed.out, plain.out) << d.m << "x" << d.k << "x" << d.n << " on " << threads << " threads";
    }
  }
}

// The default threshold (half the last-level cache) keeps normal stores
// for outputs a following op could still read from the caches.
TEST(StreamingStores, SmallOutputsKeepNormalStoresByDefault) {
  const Shape sa(DType::kF32, {64, 1024}), sb(DType::kF32, {1024});
  const std::vector<float> a = testing::random_vec<float>(size_t(sa.count()), -1, 1, 25);
  const std::vector<float> b = testing::random_vec<float>(size_t(sb.count()), 0.5, 1.5, 26);
  ASSERT_GT(resolve_streaming_store_bytes(-1), sa.byte_size());
  const Compiled c = run([](Tensor x, Tensor g) { return nn::rms_norm(x, g, -1, 1e-6); }, -1, kIsas[2], 1, sa, sb, a, b);
  EXPECT_FALSE(has_nontemporal_store(c.assembly));
  EXPECT_EQ(resolve_streaming_store_bytes(4096), 4096);
  EXPECT_EQ(resolve_streaming_store_bytes(0), 0);
}

TEST(StreamingStores, NegativeThresholdIsRejected) {
  CompileFnOptions o;
  o.compile.codegen.cpu.streaming_store_bytes = -2;
  const Shape s(DType::kF32, {4});
  auto exe = compile_fn(cpu(), o, [](Tensor x) { return x + x; }, s);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("streaming_store_bytes"), std::string::npos) << exe.status().message();
  EXPECT_NE(exe.status().message().find("-2"), std::string::npos) << exe.status().message();
}

}  // namespace
}  // namespace radix
