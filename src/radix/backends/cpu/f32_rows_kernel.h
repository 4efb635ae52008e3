// The row-group kernel for Q8_0x16 / Q4_0x16 products with f32 activations
// (trace/ops_quant.cc marks them quantized_dot::kQ8_0x16F32 / kQ4_0x16F32,
// trace/quantized_dot_marks.h), and for prompts in plain Q8_0 / Q4_0 rows
// (kQ8_0F32 / kQ4_0F32), built by the radix-int8-dot-kernels pass after
// bufferization: W's interleaved bytes are widened to f32 in registers as
// they are stored, never put back into plain rows (f32_rows_kernel.cc).
#pragma once

#include <cstdint>

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace radix {

struct F32RowsKernelPlan {
  bool q8 = true;          // Q8_0x16 (else Q4_0x16)
  bool parallel = false;   // row groups over the threads (an scf.forall)
  int64_t lanes = 16;      // f32 lanes of a vector: 16 (AVX-512) or 8 (AVX2)
  bool overwrite = false;  // store the sums (the output is undefined before), don't add them
  // A prompt (3 rows of x or more): each row group's W is dequantized
  // once into a stack buffer, then read by tiles of x's rows (f32 FMAs only).
  bool prompt = false;
  // W in plain Q8_0 / Q4_0 rows read 16 at a time (trace's kQ8_0F32 /
  // kQ4_0F32: bytes [N/16, 16, KB, 8 or 4, 4], scales [N/16, 16, KB]):
  // prompts only, each group's rows put in the x16 lane order as they are
  // dequantized.
  bool plain = false;
};

// Replaces `op` by the kernel and returns true; false (nothing created) when
// its operands are not the shapes its format implies.
bool build_f32_rows_kernel(mlir::linalg::GenericOp op, const F32RowsKernelPlan& plan);

}  // namespace radix
