#include "tools/process_quiet.h"

#include <time.h>

#include <chrono>
#include <thread>

namespace radix::tools {

namespace {
double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
// CPU time of every thread of the process but the caller.
double others_cpu_seconds() { return cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_seconds(CLOCK_THREAD_CPUTIME_ID); }
}  // namespace

double wait_until_quiet(const QuietOptions& options) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const auto t0 = Clock::now();
  double before = others_cpu_seconds();
  int quiet = 0;
  while (quiet < options.quiet_steps && since(t0) < options.max_wait_s) {
    const auto s0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(options.step_s));
    const double now = others_cpu_seconds();
    quiet = now - before <= options.busy_share * since(s0) ? quiet + 1 : 0;
    before = now;
  }
  return since(t0);
}

}  // namespace radix::tools
