// Pieces shared by the CPU schedule's emitters (schedule.cc and
// matmul_schedule.cc): marks, op predicates, the helpers that write the
// transform script's tiling steps, and the thresholds for splitting an op
// over threads. Internal to the CPU backend.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "radix/backends/cpu/cpu_options.h"

namespace radix::cpu_schedule {

inline constexpr const char* kMark = "radix.sid";
// On loops whose vector multiply-adds become vector.fma (see emit_dot_products).
inline constexpr const char* kFmaMark = "radix.fma";

// Register tiles (matmuls not packed, convolutions): at most this share of
// the vector registers holds accumulators; the rest hold the loaded operands.
inline constexpr double kMaxAccumulatorShare = 0.75;
// The accumulators a register tile may hold on `isa`: 12 of 16, 24 of 32.
inline int64_t max_accumulators(const VectorIsa& isa) {
  return static_cast<int64_t>(kMaxAccumulatorShare * static_cast<double>(isa.registers));
}

// Elementwise ops and fills: innermost dim tiled by 16 f32 (one zmm, two ymm).
inline constexpr std::initializer_list<int64_t> kElementwiseWidths = {16, 8, 4};

// ---- Threads ----------------------------------------------------------------
// An op is split over threads when it has at least this much work (loop
// iterations: elements for elementwise ops, M*N*K for matmuls): an OpenMP
// fork/join costs ~1-3 us, and below this the op runs in about that time.
inline constexpr int64_t kParallelMinWork = int64_t{1} << 16;
inline constexpr int64_t kParallelMinMatmulWork = int64_t{1} << 18;
// Dot-product tiles (weights read as [n, k] rows, the decode mat-vecs) are
// bound by reading the weights, not by FMAs: from 32K multiply-adds (128 KiB
// of f32 weights, several microseconds of reading) another core's bandwidth
// pays for the fork/join (stories15M's [1,288]·W[768,288]ᵀ has 221K).
// Only for a few rows (decode); with more rows the tiles reuse each weight
// row from cache and are bound by FMAs again. Register-tiled matmuls of a
// few rows (per batch) stream B alike and take the same threshold: x[1,288]
// · W[288,768] with W stored [K, N], out of cache, two threads (Zen 5):
// 7.9-8.1 GB/s on one core -> 13.2-13.4 split.
inline constexpr int64_t kParallelMinDotWork = int64_t{1} << 15, kDotMaxStreamingRows = 4;

// The first candidate that divides n (1 if none does).
int64_t largest_divisor(int64_t n, std::initializer_list<int64_t> candidates);

// Radix keeps bools one byte per element (LLVM's scalar i1 layout), but a
// vector<N x i1> is stored as N packed bits: ops touching bools stay scalar.
bool touches_bool(mlir::linalg::LinalgOp op);

// linalg's vectorizer needs every indexing map to be a projected permutation
// and no tensor.extract in the body (without gather support). Others — a
// reverse's (n-1-d) map, a gather — stay plain loops rather than failing the
// whole schedule.
bool vectorizable_generic(mlir::linalg::LinalgOp op);

// Every operand has a static shape.
bool all_static(mlir::linalg::LinalgOp op);

// "[a, b, c]", as the transform ops take tile sizes.
std::string tile_list(const std::vector<int64_t>& t);

// Emits `tile_using_for` of `in` by `sizes`, naming the tiled op `out` and
// its loops `out_l0`, `out_l1`, ... (one per nonzero size).
// `interchange` (a permutation of the op's loops, empty: none) orders the
// loop nest.
void emit_tile(std::ostringstream& os, const std::string& in, const std::string& out,
               const std::vector<int64_t>& sizes, const std::vector<int64_t>& interchange = {});

// Emits `structured.split` of `in` along loop `dimension` after `after`
// iterations, naming the split `split` and its two parts `first`, `second`.
void emit_split(std::ostringstream& os, const std::string& in, const std::string& split, int64_t after,
                int64_t dimension, const std::string& first, const std::string& second);

// Emits `tile_using_forall` (the tiles become the iterations of an
// scf.forall, run on the executable's threads) and names the tiled op `out`.
void emit_forall(std::ostringstream& os, const std::string& in, const std::string& out,
                 const std::vector<int64_t>& sizes);

// With `par` non-empty, tiles `id` into an scf.forall of those tile sizes
// first; returns the handle the next tiling level applies to.
std::string forall_if(std::ostringstream& os, const std::string& id, const std::vector<int64_t>& par,
                      const std::string& suffix = "f");

// The thread-split threshold of a dot-product op with `rows` rows.
int64_t min_dot_work(int64_t rows);

// The tile size that splits a loop of `range` iterations into c >= threads
// equal chunks, each a multiple of `granule` (so the inner tiles still divide
// it); c a multiple of `threads` if one fits, so no thread idles at the end.
// 0 when single-threaded or no such split exists.
int64_t parallel_chunk(int64_t range, int threads, int64_t granule);

// Forall tile sizes for `op` splitting one parallel loop (granules[d] per
// loop): the first that divides into a multiple of `threads` chunks, else
// the first that divides at all; empty when the op stays single-threaded.
std::vector<int64_t> parallel_tiles(mlir::linalg::LinalgOp op, int threads, int64_t min_work,
                                    const std::vector<int64_t>& granules);

// Tiles the innermost loop by `v` lanes and every other loop by 1, then
// vectorizes: elementwise ops, fills and reductions over outer axes.
void emit_lane_tiles(std::ostringstream& os, const std::string& id, size_t n_loops, int64_t v,
                     const std::vector<int64_t>& par = {});

}  // namespace radix::cpu_schedule
