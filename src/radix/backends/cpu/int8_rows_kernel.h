// The int8-activation quantized products' row-group kernel: Q4_0x16 /
// Q8_0x16 products (W's 16 interleaved rows in one accumulator's lanes), and
// plain Q8_0 prompts gathered 16 rows at a time into that layout, built by
// the radix-int8-dot-kernels pass (int8_dot_kernels_pass.cc, which also
// holds the row-per-accumulator kernels) after bufferization. How the
// kernel works and what was measured: int8_rows_kernel.cc.
#pragma once

#include <cstdint>

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace radix {

// Bytes of int8 values per quantized block (one 256-bit register).
inline constexpr int64_t kInt8Block = 32;

// The schedule's plan for one product (its radix.int8_kernel mark: [tm, tn,
// parallel, vnni, blocked, interleaved, wide, gfni]).
struct Int8KernelPlan {
  int64_t tm = 1, tn = 1;
  bool parallel = false, vnni = false;
  // Many activation rows (a prompt): the tile's scale products are
  // precomputed (see emit_tile) and nothing is prefetched.
  bool blocked = false;
  // Q4_0 prompts: W's rows in the accumulators' lanes (see
  // emit_interleaved_tile); tn is 8.
  bool interleaved = false;
  // 512-bit vpdpbusd over pairs of blocks (emit_block_pairs).
  bool wide = false;
  // Q4_0's block pairs' nibbles by one vgf2p8affineqb (GFNI).
  bool gfni = false;
  // Store the sums (the output is undefined before), don't add them.
  bool overwrite = false;
};

// Replaces `op` (a Q8_0x16 product when `q8`, else Q4_0x16; with `gather`
// a plain Q8_0 prompt, each tile of 16 rows rewritten as Q8_0x16 first) by
// the kernel and returns true; false (nothing created) when its shapes are
// not the format's.
bool build_int8_rows_kernel(mlir::linalg::GenericOp op, const Int8KernelPlan& plan, bool q8, bool gather);

}  // namespace radix
