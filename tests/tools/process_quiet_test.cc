#include "tools/process_quiet.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace radix::tools {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

TEST(ProcessQuiet, ReturnsAtOnceWhenNoOtherThreadRuns) {
  std::thread idle([] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
  const double waited = wait_until_quiet();
  idle.join();
  // Two 5 ms steps; the bound leaves room for a loaded machine's sleeps.
  EXPECT_LT(waited, 0.2);
}

TEST(ProcessQuiet, WaitsForASpinningThreadToStop) {
  // A thread that busy-waits 150 ms, as OpenBLAS's workers do after a call.
  std::atomic<bool> started{false}, done{false};
  std::thread spinner([&] {
    const auto t0 = Clock::now();
    started = true;
    volatile double x = 0;
    while (since(t0) < 0.15) x = x + 1;
    done = true;
  });
  while (!started) std::this_thread::yield();
  const auto t0 = Clock::now();
  const double waited = wait_until_quiet();
  const bool spinner_done = done;
  spinner.join();
  EXPECT_TRUE(spinner_done) << "returned after " << waited << " s while the spinner still ran";
  EXPECT_GE(since(t0), 0.1);
  EXPECT_LT(waited, 0.5 + 0.1);
}

TEST(ProcessQuiet, GivesUpAfterMaxWait) {
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    volatile double x = 0;
    while (!stop) x = x + 1;
  });
  QuietOptions o;
  o.max_wait_s = 0.05;
  const double waited = wait_until_quiet(o);
  stop = true;
  spinner.join();
  EXPECT_GE(waited, 0.05);
  EXPECT_LT(waited, 0.3);
}

}  // namespace
}  // namespace radix::tools
