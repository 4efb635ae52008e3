// The marks trace/ops_quant.cc puts on the linalg.generic of each quantized
// product, and that the CPU backend's schedule (matmul_schedule.cc), fusion
// (fuse_elementwise_pass.cc) and kernels (int8_dot_kernels_pass.cc, which
// builds f32_rows_kernel.cc's) read: spelled once here so that both sides
// agree.
#pragma once

namespace radix::quantized_dot {

// On every quantized product: the dot-product register tiles of the decode
// mat-vec, and elementwise fusion leaves it alone.
inline constexpr const char* kAttr = "radix.quantized_dot";
// On the products the CPU's kernels take: the format, which also fixes the
// order of the op's inputs (see quantized_matmul).
inline constexpr const char* kFormatAttr = "radix.int8_dot";

// Integer activations (x rounded to int8 blocks) times W as
inline constexpr const char* kInt8 = "int8";        // int8 per channel
inline constexpr const char* kQ8_0 = "q8_0";
inline constexpr const char* kQ4_0 = "q4_0";
inline constexpr const char* kQ8_0x16 = "q8_0x16";  // 16 rows interleaved
inline constexpr const char* kQ4_0x16 = "q4_0x16";
// f32 activations times the interleaved formats.
inline constexpr const char* kQ8_0x16F32 = "q8_0x16_f32";
inline constexpr const char* kQ4_0x16F32 = "q4_0x16_f32";
// f32 activations times plain Q8_0 / Q4_0 rows taken 16 at a time (prompts
// with n a multiple of 16: loops (m, R, i, kb, g, t) as the x16 forms').
inline constexpr const char* kQ8_0F32 = "q8_0_f32";
inline constexpr const char* kQ4_0F32 = "q4_0_f32";

}  // namespace radix::quantized_dot
