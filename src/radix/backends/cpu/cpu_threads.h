// Threads of the CPU backend. The schedule makes the outer tiles of large
// ops scf.forall loops and the "lower" stage turns those into OpenMP
// parallel loops with the executable's thread count (CpuOptions::threads),
// run by Radix's fork / join pool (fork_join_pool.h) or by LLVM's OpenMP
// runtime (libomp, linked into libradix; CpuOptions::thread_pool = false).
//
// Either gives every application thread that starts a parallel region its
// own threads, so two executables called at once from two threads would run
// 2 x N threads on N cores. CoreBudget prevents that: a call holds as many of
// the process's cores as its executable uses, and waits (first come, first
// served) while they are taken.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace radix {

// Sets libomp's defaults before its first use (the user's environment wins):
// KMP_BLOCKTIME=1 ms, so that idle workers stop spinning soon after a call
// instead of taking the cores from the caller's own work for 200 ms.
void init_cpu_threads();

class CoreBudget {
 public:
  // The process-wide budget: as many cores as the process may run on.
  static CoreBudget& process();
  explicit CoreBudget(int cores) : cores_(cores), free_(cores) {}

  // Blocks until `n` cores (clamped to 1..cores) are free, then takes them.
  int acquire(int n);
  void release(int n);
  int cores() const { return cores_; }
  // The most cores ever held at once (for tests: never above cores()).
  int peak() const;

  // Holds `n` cores for its lifetime.
  class Hold {
   public:
    Hold(CoreBudget& b, int n) : b_(b), n_(b.acquire(n)) {}
    ~Hold() { b_.release(n_); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    CoreBudget& b_;
    int n_;
  };

 private:
  const int cores_;
  int free_;
  int peak_ = 0;
  uint64_t next_ticket_ = 0, serving_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace radix
