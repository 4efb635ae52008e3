#include "radix/backends/cpu/fork_join_pool.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "radix/backends/cpu/cpu_options.h"
#include "radix/backends/cpu/initial_exec_tls.h"

namespace radix {

namespace {

// How long an idle worker spins before it sleeps (KMP_BLOCKTIME=1 ms, the
// libomp setting Radix uses, for the same reason: see cpu_threads.h).
constexpr int64_t kSpinNs = 1'000'000;
// Most workers the pool starts (CpuOptions::threads is at most 1024).
constexpr int kMaxWorkers = 1023;
// A worker's stack: the compiled code keeps small buffers on it (libomp's
// workers get 4 MiB by default).
constexpr size_t kWorkerStackBytes = size_t{8} << 20;
// Most arguments __kmpc_fork_call passes on. MLIR's OpenMP translation
// (LLVM's OpenMPIRBuilder) hands a region's captured values over as one
// struct: argc is 0 or 1.
constexpr int kMaxForkArgs = 16;

// The calling thread's region share, share count, and the thread count the
// next __kmpc_fork_call asked for (__kmpc_push_num_threads; 0: none).
// Read on every region's hot path: initial-exec TLS (initial_exec_tls.h).
thread_local int tl_share RADIX_TLS_IE = 0;
thread_local int tl_shares RADIX_TLS_IE = 1;
thread_local int tl_pending_threads RADIX_TLS_IE = 0;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs fn(ctx, share, shares) as that share of a region (what the OpenMP
// queries answer meanwhile), restoring the caller's own after.
void run_share(ForkJoinPool::Share fn, void* ctx, int share, int shares) {
  const int outer_share = tl_share, outer_shares = tl_shares;
  tl_share = share;
  tl_shares = shares;
  fn(ctx, share, shares);
  tl_share = outer_share;
  tl_shares = outer_shares;
}

std::mutex& create_mu() {
  static auto* mu = new std::mutex();  // leaked, as the pool
  return *mu;
}

}  // namespace

// One worker's mailbox. The region writes the task, then bumps `seq`; the
// worker runs it and stores `seq` into `done`. Each on a cache line of its
// own: a region costs the line carrying the task to the worker and the
// done mark back.
struct alignas(64) ForkJoinPool::Slot {
  std::atomic<uint32_t> seq{0};
  Share fn = nullptr;
  void* ctx = nullptr;
  int share = 0, shares = 1;
  std::atomic<bool> yield{false};  // wait by yielding the core (oversubscribed)
  std::atomic<int> sleeping{0};  // the worker waits in the kernel (notify needed)
  alignas(64) std::atomic<uint32_t> done{0};
  alignas(64) std::atomic<int> busy{0};  // claimed by a region
};

namespace {

std::atomic<int> g_workers{0};
std::atomic<uint64_t> g_regions{0};

// Threads running regions' shares now: the callers and the workers they
// claimed. Only the callers touch it (twice a region), so with one caller
// its cache line stays there; workers learn from their task whether to
// yield (a worker reading it would move the line at every region: ~0.4 us
// on the 2-vCPU VM).
std::atomic<int> g_busy{0};

// One step of a wait that has checked `spins` times: a pause, or a yield
// when `yield` (more threads busy than cores: a region asked for more
// threads than the process may run on, or several ran at once; spinning
// there held the core a descheduled share needed, as libomp's yields when
// oversubscribed avoid: eight shares on two cores took ~1.5 ms a region)
// or after kSpinNs of spinning since `start` (0: not read yet).
void wait_step(int spins, int64_t& start, bool yield) {
  if (yield) {
    std::this_thread::yield();
    return;
  }
  cpu_relax();
  if (spins % 256 == 0) {
    if (start == 0) start = now_ns();
    else if (now_ns() - start > kSpinNs) std::this_thread::yield();
  }
}

void* worker_main(void* arg) {
  auto* s = static_cast<ForkJoinPool::Slot*>(arg);
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = s->seq.load(std::memory_order_acquire);
    if (g == seen) {
      int64_t start = now_ns();
      for (int spins = 1; (g = s->seq.load(std::memory_order_acquire)) == seen; ++spins) {
        if (s->yield.load(std::memory_order_relaxed)) std::this_thread::yield();  // as its last region was told
        else cpu_relax();
        if (spins % 256 != 0 || now_ns() - start < kSpinNs) continue;
        // Sleep. The region stores seq, then reads `sleeping`; this stores
        // `sleeping`, then reads seq (all sequentially consistent): one of
        // the two sees the other, so no wake-up is lost.
        s->sleeping.store(1, std::memory_order_seq_cst);
        if (s->seq.load(std::memory_order_seq_cst) == seen) s->seq.wait(seen, std::memory_order_acquire);
        s->sleeping.store(0, std::memory_order_relaxed);
        start = now_ns();
      }
    }
    seen = g;
    run_share(s->fn, s->ctx, s->share, s->shares);
    s->done.store(g, std::memory_order_release);
  }
  return nullptr;
}

// A child process of fork() has only the thread that forked: it forgets
// the parent's workers (their slots are leaked) and starts its own.
void forget_workers_in_child() {
  g_workers.store(0, std::memory_order_relaxed);
  g_busy.store(0, std::memory_order_relaxed);
}

// Starts a worker on `slot`; false if the system refuses a thread.
bool start_worker(ForkJoinPool::Slot* slot) {
  static const bool at_fork = pthread_atfork(nullptr, nullptr, &forget_workers_in_child) == 0;
  (void)at_fork;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  pthread_attr_setstacksize(&attr, kWorkerStackBytes);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  const bool ok = pthread_create(&t, &attr, &worker_main, slot) == 0;
  pthread_attr_destroy(&attr);
  return ok;
}

}  // namespace

ForkJoinPool& ForkJoinPool::process() {
  static ForkJoinPool* pool = new ForkJoinPool();  // leaked: compiled code may run during exit
  return *pool;
}

int ForkJoinPool::current_share() { return tl_share; }
int ForkJoinPool::current_shares() { return tl_shares; }
int ForkJoinPool::workers() const { return g_workers.load(std::memory_order_acquire); }
uint64_t ForkJoinPool::regions() const { return g_regions.load(std::memory_order_relaxed); }

void ForkJoinPool::claim(int want, std::vector<Slot*>& out) {
  const int have = g_workers.load(std::memory_order_acquire);
  for (int i = 0; i < have && static_cast<int>(out.size()) < want; ++i) {
    Slot* s = slots_[i];
    int idle = 0;
    if (s->busy.load(std::memory_order_relaxed) == 0 &&
        s->busy.compare_exchange_strong(idle, 1, std::memory_order_acquire))
      out.push_back(s);
  }
  if (static_cast<int>(out.size()) >= want) return;
  // Every worker is taken (by this region or by other executables' running
  // at once): start more. CoreBudget keeps the threads of the calls
  // running at once within the cores.
  std::lock_guard<std::mutex> lock(create_mu());
  while (static_cast<int>(out.size()) < want) {
    const int n = g_workers.load(std::memory_order_relaxed);
    if (n >= kMaxWorkers) return;
    auto* s = new Slot();
    s->busy.store(1, std::memory_order_relaxed);
    if (!start_worker(s)) {
      delete s;
      return;  // the caller runs the shares left over
    }
    slots_[n] = s;
    g_workers.store(n + 1, std::memory_order_release);
    out.push_back(s);
  }
}

void ForkJoinPool::run(int n, Share fn, void* ctx) {
  g_regions.fetch_add(1, std::memory_order_relaxed);
  // One share, or a region inside a region (as libomp's default of one
  // active level): every share on this thread.
  if (n <= 1 || tl_shares > 1) {
    for (int i = 0; i < std::max(n, 1); ++i) run_share(fn, ctx, i, std::max(n, 1));
    return;
  }
  thread_local std::vector<Slot*> claimed;  // reused: no allocation per region
  claimed.clear();
  claim(n - 1, claimed);
  const int helpers = static_cast<int>(claimed.size());
  static const int cores = resolve_cpu_threads(0);
  const bool yield = g_busy.fetch_add(1 + helpers, std::memory_order_relaxed) + 1 + helpers > cores;
  thread_local std::vector<uint32_t> expect;
  expect.resize(static_cast<size_t>(helpers));
  for (int i = 0; i < helpers; ++i) {
    Slot* s = claimed[i];
    s->fn = fn;
    s->ctx = ctx;
    s->share = i + 1;
    s->shares = n;
    s->yield.store(yield, std::memory_order_relaxed);
    const uint32_t g = s->seq.load(std::memory_order_relaxed) + 1;
    expect[i] = g;
    s->seq.store(g, std::memory_order_seq_cst);
    if (s->sleeping.load(std::memory_order_seq_cst)) s->seq.notify_one();
  }
  run_share(fn, ctx, 0, n);
  for (int i = helpers + 1; i < n; ++i) run_share(fn, ctx, i, n);  // shares no worker took
  for (int i = 0; i < helpers; ++i) {
    Slot* s = claimed[i];
    // (After kSpinNs, a worker descheduled for long on a shared host: stop
    // burning the core it may need.)
    int64_t start = 0;
    for (int spins = 1; s->done.load(std::memory_order_acquire) != expect[i]; ++spins) wait_step(spins, start, yield);
    s->busy.store(0, std::memory_order_release);
  }
  g_busy.fetch_sub(1 + helpers, std::memory_order_relaxed);
}

namespace {

// The OpenMP runtime's entry points the compiled code calls (LLVM's kmp.h
// signatures), bound to the pool.
using Microtask = void (*)(int32_t* global_tid, int32_t* bound_tid, ...);

struct ForkArgs {
  Microtask micro;
  int argc;
  void* args[kMaxForkArgs];
};

template <size_t... I>
void call_micro(const ForkArgs& f, int32_t* gtid, int32_t* btid, std::index_sequence<I...>) {
  // The outlined region is a plain function of (ptr, ptr, its arguments).
  using Fn = void (*)(int32_t*, int32_t*, decltype((void)I, static_cast<void*>(nullptr))...);
  reinterpret_cast<Fn>(reinterpret_cast<void*>(f.micro))(gtid, btid, f.args[I]...);
}

template <size_t... N>
constexpr auto micro_callers(std::index_sequence<N...>) {
  using Caller = void (*)(const ForkArgs&, int32_t*, int32_t*);
  return std::array<Caller, sizeof...(N)>{
      [](const ForkArgs& f, int32_t* g, int32_t* b) { call_micro(f, g, b, std::make_index_sequence<N>()); }...};
}

void run_microtask(void* ctx, int share, int /*shares*/) {
  static constexpr auto callers = micro_callers(std::make_index_sequence<kMaxForkArgs + 1>());
  const auto& f = *static_cast<const ForkArgs*>(ctx);
  int32_t gtid = share, btid = share;
  callers[static_cast<size_t>(f.argc)](f, &gtid, &btid);
}

void kmpc_fork_call(void* /*loc*/, int32_t argc, Microtask micro, ...) {
  if (argc < 0 || argc > kMaxForkArgs) {
    std::fprintf(stderr,
                 "radix cpu: a parallel region passes %d arguments; the thread pool takes at most %d (MLIR's "
                 "OpenMP translation passes one struct). Compile with CpuOptions::thread_pool = false.\n",
                 static_cast<int>(argc), kMaxForkArgs);
    std::abort();
  }
  ForkArgs f{micro, argc, {}};
  va_list ap;
  va_start(ap, micro);
  for (int i = 0; i < argc; ++i) f.args[i] = va_arg(ap, void*);
  va_end(ap);
  const int n = tl_pending_threads > 0 ? tl_pending_threads : resolve_cpu_threads(0);
  tl_pending_threads = 0;
  ForkJoinPool::process().run(n, &run_microtask, &f);
}

void kmpc_push_num_threads(void* /*loc*/, int32_t /*gtid*/, int32_t n) { tl_pending_threads = n; }
int32_t kmpc_global_thread_num(void* /*loc*/) { return tl_share; }
int omp_thread_num() { return tl_share; }
int omp_num_threads() { return tl_shares; }

}  // namespace

std::vector<HostSymbol> kmpc_entry_points() {
  return {{"__kmpc_fork_call", reinterpret_cast<void*>(&kmpc_fork_call)},
          {"__kmpc_push_num_threads", reinterpret_cast<void*>(&kmpc_push_num_threads)},
          {"__kmpc_global_thread_num", reinterpret_cast<void*>(&kmpc_global_thread_num)},
          {"omp_get_thread_num", reinterpret_cast<void*>(&omp_thread_num)},
          {"omp_get_num_threads", reinterpret_cast<void*>(&omp_num_threads)}};
}

}  // namespace radix
