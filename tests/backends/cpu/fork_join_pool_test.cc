// ForkJoinPool (CpuOptions::thread_pool): every share of a region runs once,
// with its index, from any number of threads at once, after the workers went
// to sleep, and nested (on the caller's thread); executables bind their
// parallel regions to it (or to libomp when asked) with the same results.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "radix/backends/cpu/fork_join_pool.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

// What each share of a region saw.
struct Record {
  std::atomic<int> runs{0};
  std::atomic<int> shares{0};
  std::atomic<int> current{-1};
  std::thread::id thread;
  std::mutex mu;
};

struct Region {
  std::vector<Record> records;
  explicit Region(int n) : records(static_cast<size_t>(n)) {}
  static void share(void* ctx, int i, int n) {
    Record& r = static_cast<Region*>(ctx)->records[static_cast<size_t>(i)];
    r.runs.fetch_add(1);
    r.shares.store(n);
    r.current.store(ForkJoinPool::current_share() * 1000 + ForkJoinPool::current_shares());
    std::lock_guard<std::mutex> lock(r.mu);
    r.thread = std::this_thread::get_id();
  }
};

TEST(ForkJoinPool, RunsEveryShareOnceWithItsIndex) {
  EXPECT_EQ(ForkJoinPool::current_share(), 0);
  EXPECT_EQ(ForkJoinPool::current_shares(), 1);
  for (int n : {1, 2, 3, 5, 8}) {
    for (int rep = 0; rep < 50; ++rep) {
      Region r(n);
      ForkJoinPool::process().run(n, &Region::share, &r);
      for (int i = 0; i < n; ++i) {
        const Record& rec = r.records[static_cast<size_t>(i)];
        ASSERT_EQ(rec.runs.load(), 1) << "share " << i << " of " << n;
        EXPECT_EQ(rec.shares.load(), n);
        // omp_get_thread_num / omp_get_num_threads inside the share.
        EXPECT_EQ(rec.current.load(), i * 1000 + n);
      }
      // Share 0 runs on the caller; the queries answer one thread again after.
      EXPECT_EQ(r.records[0].thread, std::this_thread::get_id());
      EXPECT_EQ(ForkJoinPool::current_share(), 0);
      EXPECT_EQ(ForkJoinPool::current_shares(), 1);
    }
  }
  EXPECT_GE(ForkJoinPool::process().workers(), 1);
}

TEST(ForkJoinPool, SharesRunOnWorkersAlsoAfterTheyWentToSleep) {
  for (int rep = 0; rep < 3; ++rep) {
    // Idle workers sleep after ~1 ms of spinning: the next region wakes them.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Region r(2);
    ForkJoinPool::process().run(2, &Region::share, &r);
    EXPECT_EQ(r.records[0].runs.load(), 1);
    ASSERT_EQ(r.records[1].runs.load(), 1);
    EXPECT_NE(r.records[1].thread, std::this_thread::get_id());
  }
}

TEST(ForkJoinPool, RegionsFromManyThreadsAtOnce) {
  constexpr int kThreads = 4, kRegions = 2000;
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t)
    callers.emplace_back([&, t] {
      for (int k = 0; k < kRegions; ++k) {
        const int n = 2 + (t + k) % 3;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        struct Ctx {
          std::vector<std::atomic<int>>* hits;
        } ctx{&hits};
        ForkJoinPool::process().run(
            n, [](void* c, int i, int) { (*static_cast<Ctx*>(c)->hits)[static_cast<size_t>(i)].fetch_add(1); }, &ctx);
        for (auto& h : hits)
          if (h.load() != 1) ++wrong;
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ForkJoinPool, RegionInsideARegionRunsOnItsThread) {
  struct Outer {
    std::atomic<int> bad{0}, inner_runs{0};
  } outer;
  ForkJoinPool::process().run(
      2,
      [](void* c, int i, int n) {
        auto* o = static_cast<Outer*>(c);
        const std::thread::id me = std::this_thread::get_id();
        struct Inner {
          Outer* o;
          std::thread::id me;
        } inner{o, me};
        ForkJoinPool::process().run(
            3,
            [](void* c2, int j, int m) {
              auto* in = static_cast<Inner*>(c2);
              in->o->inner_runs.fetch_add(1);
              if (std::this_thread::get_id() != in->me || ForkJoinPool::current_share() != j ||
                  ForkJoinPool::current_shares() != m)
                in->o->bad.fetch_add(1);
            },
            &inner);
        // The outer share's own index comes back after the nested region.
        if (ForkJoinPool::current_share() != i || ForkJoinPool::current_shares() != n) o->bad.fetch_add(1);
      },
      &outer);
  EXPECT_EQ(outer.inner_runs.load(), 6);
  EXPECT_EQ(outer.bad.load(), 0);
}

// A child process (fork) has none of its parent's workers: its regions
// start their own instead of waiting on threads that are not there.
TEST(ForkJoinPool, ForkedChildRunsItsOwnWorkers) {
  Region warm(2);
  ForkJoinPool::process().run(2, &Region::share, &warm);  // the parent has a worker
  ASSERT_GE(ForkJoinPool::process().workers(), 1);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const bool none = ForkJoinPool::process().workers() == 0;
    Region r(2);
    ForkJoinPool::process().run(2, &Region::share, &r);
    const bool ran = r.records[0].runs.load() == 1 && r.records[1].runs.load() == 1 &&
                     r.records[1].thread != std::this_thread::get_id();
    ::_exit(none && ran ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit (a hang is a timeout)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A threaded executable's parallel regions run on the pool by default and
// on libomp with thread_pool = false (the option is part of the cache key:
// the second compile is not the first one's cached executable), with the
// same numbers.
TEST(ForkJoinPool, ExecutablesBindTheirRegionsToThePoolUnlessTold) {
  Shape s(DType::kF32, {512, 1024});
  std::vector<float> x = testing::random_vec<float>(static_cast<size_t>(s.count()), -2, 2, 11);
  Buffer xb = must(cpu().buffer(s, x));
  auto run = [&](bool pool, uint64_t* regions) {
    CompileFnOptions o;
    o.compile.codegen.cpu.threads = 2;
    o.compile.codegen.cpu.thread_pool = pool;
    auto exe = must(compile_fn(cpu(), o, [](Tensor a) { return a * a + 1.0; }, s));
    const uint64_t before = ForkJoinPool::process().regions();
    std::vector<float> y;
    for (int i = 0; i < 3; ++i) y = must(must(exe.call(xb)).to_host<float>());
    *regions = ForkJoinPool::process().regions() - before;
    return y;
  };
  uint64_t on_pool = 0, on_libomp = 0;
  const std::vector<float> a = run(true, &on_pool), b = run(false, &on_libomp);
  EXPECT_GE(on_pool, 3u);
  EXPECT_EQ(on_libomp, 0u);
  ASSERT_EQ(a.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(a[i], x[i] * x[i] + 1.0f) << i;
    ASSERT_EQ(b[i], a[i]) << i;
  }
  CompileOptions with, without;
  without.codegen.cpu.thread_pool = false;
  EXPECT_NE(cpu().backend()->codegen_fingerprint(with), cpu().backend()->codegen_fingerprint(without));
}

}  // namespace
}  // namespace radix
