// The CPU tiling + vectorization schedule, expressed in the transform dialect
// and generated per module: each linalg op with static shapes gets tile sizes
// that divide its dims (so every tile vectorizes), chosen by its kind.
//
//  * linalg.matmul, large f32 (M*N*K >= 2^24, dims divisible by the blocks):
//    B and C packed into column panels of two vector registers ([N/p][K][p]),
//    output blocks of 96 (6-row tiles) or 64 rows (AVX2) or 256 (AVX-512) x
//    256 columns, column blocks outermost, K blocks of 256 (AVX2) or 512,
//    register tiles of 6 / 4 (AVX2) or 8 (AVX-512) rows x one panel, K steps
//    of 4, vectorized into vector.contract and lowered to FMAs as outer
//    products (matmul_schedule.cc).
//  * other matmuls: optional L2 blocking as above without packing, then
//    tm x tn register tiles sized to the host's vector registers (8 x 32 on
//    AVX-512, 6/4 x 16 on AVX2) with K steps of 1.
//  * linalg.batch_matmul (every batched dot_general is canonicalized to one):
//    batch tiles of 1, then the matmul register tiles and K steps of 1.
//  * elementwise linalg.generic / linalg.fill: the innermost dim tiled by the
//    vector width (16, 8 or 4 lanes), the others by 1, then vectorized.
//  * single-loop reductions: an innermost reduction is split into vector-wide
//    partial results (tile_reduction_using_for) combined at the end; a
//    reduction over an outer axis steps through a vector of columns.
//  * row-fusion groups: a reduction along the last axis broadcast back over
//    the row (softmax, RMSNorm, LayerNorm) and the elementwise ops around it
//    run one row at a time, fused into one loop, each vectorized.
//  * everything else (multi-axis reductions, ops on bools): scalar loops.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "radix/backends/cpu/cpu_options.h"
#include "radix/core/status.h"

namespace mlir { class ModuleOp; }

namespace radix {

struct ScheduleSummary {
  int matmuls = 0;      // matmuls given register tiles
  int packed = 0;       // ... of which with B packed into column panels
  int elementwise = 0;  // elementwise ops / fills vectorized
  int reductions = 0;   // single-loop reductions vectorized
  int skipped = 0;      // ops left as scalar loops
  int parallel = 0;     // ops whose outer tiles are an scf.forall (threads > 1)
  int fused_rows = 0;   // row-fusion groups (softmax, norms: reductions + elementwise, one row at a time)
  int fused_consumers = 0;  // elementwise consumers (bias, activation) run on their matmuls' register tiles
  int swapped = 0;     // prompt matmuls x · Wᵀ computed as (W · xᵀ)ᵀ (packing x, not W)
  int transposes = 0;  // elementwise ops transposing their innermost axis in square tiles
  int padded = 0;      // matmuls computed on zero-padded operands (sizes no tile divides)
  int split = 0;       // matmuls split at their last whole tile (main product + rest)
  int thread_regions = 0;  // batched products split by batch over the threads before being fitted
  int batch_loops = 0;  // batched products of a transposed B run one batch at a time (one thread)
  int widened = 0;      // prompt matmuls of bf16 / f16 weights run on the weights widened to f32 first
  int b_in_place = 0;   // matmuls reading a B that fits in L2 in place instead of packing it
  // "2 matmuls (1 packed), 3 elementwise, 1 reductions, 4 left as loops, 2 on
  // threads, 0 row-fused groups, 0 consumers fused into matmuls, 1
  // operand-swapped, 1 tiled transposes, 0 padded, 0 split, 0 batched by
  // thread, 0 one batch at a time, 0 half-precision weights widened, 0 B read
  // in place"
  std::string to_string() const;
};

// The host CPU's vector ISA (detected once).
VectorIsa host_vector_isa();
// The vector ISA of resolve_target_cpu's "cpu +feature,-feature,..." (empty:
// the host's): a schedule for CompileOptions.codegen.target_cpu = "znver3"
// tiles for AVX2's 16 registers even on an AVX-512 host.
VectorIsa target_vector_isa(std::string_view target_features);
// The features of `target_features` (as above) this host lacks: code for
// that CPU may stop here on an illegal instruction unless it is empty.
std::vector<std::string> features_missing_on_host(std::string_view target_features);
// The ISA a schedule is sized for: `requested`'s nonzero fields
// (CpuOptions::schedule_isa) over the target CPU's (target_vector_isa). The
// cache key and the schedule both take it from here.
VectorIsa schedule_vector_isa(const VectorIsa& requested, std::string_view target_features);

// Marks schedulable ops in @main with radix.sid attributes and returns the
// transform script (empty when nothing is to be scheduled), tiled for `isa`
// (schedule_vector_isa's, all fields set). With threads > 1, the outer tiles of large
// ops (output blocks of matmuls, rows / chunks of elementwise ops and
// reductions; never a reduction axis) become scf.forall loops, which the
// "lower" stage turns into OpenMP parallel loops.
//
// `int8`: where integer-activation quantized products may become the
// radix-int8-dot-kernels pass's kernels (none: they are tiled like the
// other quantized products).
struct Int8Target {
  bool avx2 = false;  // vpmaddubsw + vpmaddwd
  bool vnni = false;  // vpdpbusd on 256-bit vectors (AVX-512 VNNI + VL, or AVX-VNNI)
  bool bf16 = false;  // vdpbf16ps on 512-bit vectors (AVX-512 BF16, where it outruns FMAs): radix-bf16-dot-kernels
  // vpdpbusd on 512-bit vectors (AVX-512 VNNI + BW): two blocks per
  // instruction in radix-int8-dot-kernels, where the schedule's ISA has
  // 16 f32 lanes (build_cpu_schedule clears it for narrower schedule_isa).
  bool vnni512 = false;
  // 16 f32 lanes (AVX-512F, with a 16-lane schedule as vnni512): the f32-
  // activation row-group kernels' width (f32_rows_kernel.cc), else 8.
  bool avx512 = false;
  // vgf2p8affineqb (GFNI, with vnni512): Q4_0's nibbles in one instruction
  // per block pair (radix-int8-dot-kernels' emit_block_pairs).
  bool gfni = false;
  // vfmadd (FMA): the math stage's exp of f32 vectors (FloorExp in
  // math_approximation_pass.cc; the FMA targets all have SSE4.1's vroundps).
  bool fma = false;
};
// From resolve_target_cpu's "cpu +feature,-feature,..." (empty: the host).
Int8Target int8_target(std::string_view target_features);
std::string build_cpu_schedule(mlir::ModuleOp module, const VectorIsa& isa, int threads, ScheduleSummary* summary,
                               const Int8Target& int8 = {});

// Parses and applies a transform script to the module, then strips the marks.
Status apply_schedule(mlir::ModuleOp module, const std::string& script);

}  // namespace radix
