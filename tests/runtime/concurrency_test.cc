// The thread-safety the headers promise: Platform::compile and
// Executable::call from several threads at once.
#include <gtest/gtest.h>

#include <thread>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

TEST(Concurrency, CompileFromSeveralThreads) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  std::vector<float> results(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &errors, &results] {
      Shape s(DType::kF32, {16, 16});
      auto exe = compile_fn(cpu(), [](Tensor a, Tensor b) { return reduce_sum(matmul(a, b) * 2.0); }, s, s);
      if (!exe.ok()) { errors[t] = exe.status().to_string(); return; }
      std::vector<float> ones(256, 1.f + t);
      auto a = cpu().buffer(s, ones);
      auto out = exe->call(*a, *a);
      if (!out.ok()) { errors[t] = out.status().to_string(); return; }
      results[t] = (*out->to_host<float>())[0];
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    // sum over 16x16 of (16 * (1+t)^2) * 2, exact in f32.
    EXPECT_EQ(results[t], 256.f * 16.f * (1 + t) * (1 + t) * 2.f) << "thread " << t;
  }
}

TEST(Concurrency, CallOneExecutableFromSeveralThreads) {
  Shape s(DType::kF32, {1024});
  auto exe = must(compile_fn(cpu(), [](Tensor x, Tensor y) { return x * y + 1.0; }, s, s));
  constexpr int kThreads = 4, kCalls = 50;
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> x(1024), y(1024);
      for (int i = 0; i < 1024; ++i) { x[i] = float(i % 17 + t); y[i] = float(t + 1); }
      Buffer xb = must(cpu().buffer(s, x)), yb = must(cpu().buffer(s, y));
      for (int c = 0; c < kCalls; ++c) {
        std::vector<float> got = must(must(exe.call(xb, yb)).to_host<float>());
        for (int i = 0; i < 1024; ++i) bad[t] += got[i] != x[i] * y[i] + 1.f;
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace radix
