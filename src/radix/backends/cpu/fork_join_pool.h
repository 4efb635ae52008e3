// ForkJoinPool: the CPU backend's own runtime for the compiled code's
// parallel regions. The "lower" stage turns the schedule's scf.forall loops
// into OpenMP parallel regions (MLIR's scf -> omp route, then LLVM's
// OpenMPIRBuilder), whose code calls five entry points of an OpenMP runtime:
// __kmpc_fork_call, __kmpc_push_num_threads, __kmpc_global_thread_num,
// omp_get_thread_num and omp_get_num_threads (each thread runs its static
// share of the iterations from the last two; radix-omp-static-chunks). When
// CpuOptions::thread_pool is set, the backend binds those names in each
// loaded object to this pool (kmpc_entry_points) instead of LLVM's libomp.
//
// Why: a decode step runs dozens of small parallel regions (the mat-vecs of
// every layer), each a few microseconds of work. On the 2-vCPU Zen 5 VM a
// libomp fork / join of two threads costs ~1.6 us back to back; this pool's
// ~0.5 us (bench/RESULTS.md, 2026-12-07). The pool does only what the
// generated code needs: one region runs a function on n threads, thread i
// running share i, and returns when every share is done.
//
// How: worker threads (started when a region finds too few idle ones,
// never destroyed) each wait on a slot of their own: a region
// claims idle workers (one compare-and-swap each), writes the task into
// their slots and bumps each slot's sequence number; a waiting worker spins
// for up to kSpinNs (as libomp's KMP_BLOCKTIME=1 ms, which Radix sets: idle
// workers stop taking cores soon after a call), then sleeps on the sequence
// number (futex). The caller runs share 0 and, when fewer workers were idle
// than shares (another executable's region holds them, or a region inside a
// region), the shares left over one after the other; then it waits for the
// workers' done marks. Shares are independent (the static chunks split
// output tiles; a region's code has no barrier), so which thread runs a
// share changes no result.
//
// Thread-safety: regions may start from any threads at once, and nest.
#pragma once

#include <cstdint>
#include <vector>

#include "radix/runtime/host_symbols.h"

namespace radix {

class ForkJoinPool {
 public:
  // The process's pool (leaked: compiled code may run during exit).
  static ForkJoinPool& process();

  // Runs fn(ctx, i, n) for every share i in [0, n): share 0 on the caller,
  // the others on idle workers or, where none is idle, on the caller after
  // its own. Returns when all are done. n <= 1 runs fn(ctx, 0, 1) here.
  using Share = void (*)(void* ctx, int share, int shares);
  void run(int n, Share fn, void* ctx);

  // The share and share count of the region the calling thread runs (0 and
  // 1 outside any region): what omp_get_thread_num / omp_get_num_threads
  // answer in the compiled code.
  static int current_share();
  static int current_shares();

  // Workers started so far, and regions run (for tests).
  int workers() const;
  uint64_t regions() const;

  struct Slot;

 private:
  ForkJoinPool() = default;
  // Claims `want` workers, idle ones first, then newly started ones (fewer
  // if the system refuses threads), appending their slots to `out`.
  void claim(int want, std::vector<Slot*>& out);

  Slot* slots_[1024] = {};  // started workers' slots, in start order (never freed)
};

// The OpenMP entry points above, bound to the pool (host-symbol names and
// addresses, for the loader).
std::vector<HostSymbol> kmpc_entry_points();

}  // namespace radix
