// CpuOptions: the CPU backend's own code-generating options. They live in
// CodegenOptions::cpu (see compiler/compile_options.h) and so are part of the
// executable-cache key.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cstdint>

namespace radix {

// The SIMD registers the CPU schedule tiles for. Zero fields mean "the
// host's". Setting them checks the schedule another CPU would get — e.g.
// AVX-512's {16, 32} — on this machine.
struct VectorIsa {
  int f32_lanes = 0;  // f32 values per vector register (4 SSE/NEON, 8 AVX2, 16 AVX-512)
  int registers = 0;  // vector registers (16 or 32)
};

struct CpuOptions {
  // Apply the transform-dialect tiling + vectorization schedule. Off gives
  // plain scalar loops (a reference for debugging the schedule).
  bool vectorize = true;
  // f32 exp / expm1 / log / log1p / log2 / tanh / erf as vectorizable
  // polynomial approximations (a few ulp on normal results; results in the
  // subnormal range flush to zero, except exp's on AVX-512 targets), ~3x
  // faster than per-lane libm calls.
  // false: libm, correctly rounded or nearly so. Other dtypes always use libm.
  bool approximate_math = true;
  // Override of the vector ISA the schedule is sized for (see VectorIsa).
  VectorIsa schedule_isa;
  // Threads an executable runs its large ops on (MLIR's scf.forall -> omp
  // route; the regions run on Radix's pool or libomp, see thread_pool). 0:
  // every core this process may run on; 1: single-threaded code with no
  // OpenMP calls at all. Results do
  // not depend on it: work is split over output tiles only, never over a
  // reduction axis, so every sum adds in the same order.
  int threads = 0;
  // Integer-activation quantized products (trace/ops_quant.h) as x86 byte
  // dot-product kernels (AVX2 vpmaddubsw + vpmaddwd, VNNI vpdpbusd) when
  // the target CPU has AVX2. false: the vectorized schedule widens their
  // bytes to f32 instead (what CPUs without AVX2 get; a reference).
  bool int8_kernels = true;
  // Products of f32 activations and bf16 weights read as [n, k] (x · Wᵀ,
  // K a multiple of 32) as AVX-512 BF16 vdpbf16ps kernels when the target
  // CPU has avx512bf16 and runs it faster than FMAs (AMD Zen 4 / 5; on
  // Intel Xeons it ran at half their rate): x is rounded to bf16 (to nearest even, as
  // llama.cpp and oneDNN do), each pair of products is exact and the sums
  // are f32 (vdpbf16ps treats bf16 subnormals as zero). About 2x the
  // multiply-adds per instruction of widening W to f32. false: x stays f32
  // and W is widened (exact f32 products; what CPUs without avx512bf16 get).
  bool bf16_kernels = true;
  // Outputs of at least this many bytes that a function only writes (no op
  // reads them back: an elementwise result, an RMSNorm output) are
  // written with x86 non-temporal stores, which skip reading each line into
  // the caches first (an RMSNorm over 4096 x 4096 f32: ~1.5x on a contended
  // host). Loops that also evaluate exp, tanh, erf or another polynomial
  // (softmax, SiLU, GELU) keep normal stores: measured faster there. -1: half the
  // host's last-level cache, so that outputs a following op could read from
  // the cache keep normal stores; 0: never. Ignored on other CPUs.
  int64_t streaming_store_bytes = -1;
  // Neighbouring parallel loops that touch no buffer the other writes (the
  // q, k and v products of one x) run as one OpenMP parallel region: one
  // fork / join instead of several (radix-merge-foralls). A small model's
  // decode step on two threads paid some 21% of its time in them. false:
  // one region per loop.
  bool merge_parallel_loops = true;
  // Parallel regions run on Radix's own fork / join pool (fork_join_pool.h):
  // the compiled code's OpenMP runtime calls are bound to it when the
  // executable is loaded. A region of two threads costs ~0.5 us there
  // against ~1.6 us in libomp (2-vCPU Zen 5 VM), which a decode step pays
  // dozens of times. false: LLVM's libomp runs them.
  bool thread_pool = true;
};

// The thread count `threads` resolves to (0 -> the cores this process may
// run on, from its CPU affinity mask).
int resolve_cpu_threads(int threads);

// The size of the host's largest CPU cache (its last level) in bytes, from
// sysfs; 0 when unknown.
int64_t host_last_level_cache_bytes();

// The byte threshold `streaming_store_bytes` resolves to (-1 -> half of
// host_last_level_cache_bytes(), or 16 MiB when that is unknown).
int64_t resolve_streaming_store_bytes(int64_t bytes);

}  // namespace radix
