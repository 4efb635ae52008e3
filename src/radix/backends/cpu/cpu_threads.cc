#include "radix/backends/cpu/cpu_threads.h"

#include <algorithm>
#include <cstdlib>

#include <sched.h>

#include "radix/backends/cpu/cpu_options.h"

// libomp's API (from its omp.h); the library is linked into libradix so the
// JIT-compiled code finds __kmpc_fork_call and friends in the process.
extern "C" int omp_get_num_procs(void);

namespace radix {

void init_cpu_threads() {
  static const bool done = [] {
    setenv("KMP_BLOCKTIME", "1", /*overwrite=*/0);
    return true;
  }();
  (void)done;
}

int resolve_cpu_threads(int threads) {
  if (threads > 0) return threads;
  static const int cores = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    init_cpu_threads();
    return std::max(1, omp_get_num_procs());
  }();
  return cores;
}

CoreBudget& CoreBudget::process() {
  static CoreBudget* budget = new CoreBudget(resolve_cpu_threads(0));  // never destroyed: used until exit
  return *budget;
}

int CoreBudget::acquire(int n) {
  n = std::clamp(n, 1, cores_);
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  cv_.wait(lock, [&] { return ticket == serving_ && free_ >= n; });
  free_ -= n;
  ++serving_;
  peak_ = std::max(peak_, cores_ - free_);
  lock.unlock();
  cv_.notify_all();  // the next ticket may fit in what is left
  return n;
}

void CoreBudget::release(int n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_ += n;
  }
  cv_.notify_all();
}

int CoreBudget::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

}  // namespace radix
