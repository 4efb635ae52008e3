// Quantized contractions (ops_quant.h): one linalg.generic per product whose
// body widens and scales the weight element, marked quantized_dot::kAttr so the
// CPU schedule gives it the dot-product register tiles of the decode
// mat-vec (backends/cpu/schedule.cc) and elementwise fusion leaves it alone.
#include "radix/trace/ops_quant.h"

#include <string>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"
#include "radix/trace/ops_layout.h"
#include "radix/trace/ops_math.h"
#include "radix/trace/quantized_dot_marks.h"

namespace radix {

using namespace detail;
using mlir::Value;

namespace {

std::string shapes(const Tensor& values, const Tensor& scales) {
  return values.shape().to_string() + ", " + scales.shape().to_string();
}

// (n, k) of W.
std::pair<int64_t, int64_t> weight_dims(QuantFormat f, const Tensor& values) {
  if (f == QuantFormat::kQ4_0x16 || f == QuantFormat::kQ8_0x16)
    return {values.dim(0) * kQuantRowGroup, values.dim(1) * kQuantBlock};
  return {values.dim(0), f == QuantFormat::kQ4_0 ? values.dim(1) * 2 : values.dim(1)};
}

// An x16 format's values and scales in the plain layout (Q4_0: u8 [n, k/2],
// Q8_0: i8 [n, k]; f16 [n, k/32]): row 16R + i's byte 4g + t of block b is
// values[R, b, g, i, t].
std::pair<Tensor, Tensor> plain_rows(const Tensor& values, const Tensor& scales) {
  const int64_t n = values.dim(0) * kQuantRowGroup, kb = values.dim(1), bytes = values.dim(2) * 4;
  return {reshape(transpose(values, {0, 3, 1, 2, 4}), {n, kb * bytes}), reshape(transpose(scales, {0, 2, 1}), {n, kb})};
}

using BodyFn = std::function<Value(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)>;

// acc[m, n] += body(inputs) over loops (m, n, reductions...); `maps` are the
// inputs' maps as lists of loop indices.
//
// `int8` (the products the CPU's kernels take): the op is also marked
// quantized_dot::kFormatAttr with this format; with
// M == 1 its m loop is left out (maps given with m as loop 0 are shifted),
// so that no unit loop is folded away (which rebuilds the op without marks).
//
// The output is [M, N], or [M, N/16, 16] (`row_groups`: Q4_0x16's loops
// (m, R, i, ...) over W's row groups R and rows i within them), returned as
// [M, N] either way.
Tensor emit_contraction(const char* op, const std::vector<Tensor>& inputs,
                        std::vector<std::vector<unsigned>> maps, unsigned n_loops, int64_t M, int64_t N,
                        const BodyFn& body, const char* int8 = nullptr, bool row_groups = false) {
  CompilationContext& ctx = context_for(op, {&inputs[0]});
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();
  const bool drop_m = int8 != nullptr && M == 1;
  std::vector<unsigned> out_map = {0, 1};
  if (row_groups) out_map.push_back(2);
  std::vector<Tensor> in = inputs;
  if (drop_m) {
    for (size_t i = 0; i < in.size(); ++i)
      if (!maps[i].empty() && maps[i][0] == 0) {
        std::vector<int64_t> dims(in[i].shape().dims().begin() + 1, in[i].shape().dims().end());
        in[i] = reshape(in[i], std::span<const int64_t>(dims));
      }
    for (auto& m : maps) {
      std::vector<unsigned> shifted;
      for (unsigned d : m)
        if (d != 0) shifted.push_back(d - 1);
      m = shifted;
    }
    out_map.pop_back();
    --n_loops;
  }
  std::vector<int64_t> out_dims;
  if (!drop_m) out_dims.push_back(M);
  if (row_groups) out_dims.insert(out_dims.end(), {N / kQuantRowGroup, kQuantRowGroup});
  else out_dims.push_back(N);
  const Shape out(DType::kF32, std::span<const int64_t>(out_dims));
  Value zero = scalar_constant(b, l, DType::kF32, 0);
  Value acc = mlir::linalg::FillOp::create(b, l, mlir::ValueRange{zero}, mlir::ValueRange{empty_tensor(ctx, out)})
                  .getResult(0);
  llvm::SmallVector<mlir::AffineMap> affine;
  auto make_map = [&](const std::vector<unsigned>& dims) {
    llvm::SmallVector<mlir::AffineExpr> e;
    for (unsigned d : dims) e.push_back(mlir::getAffineDimExpr(d, mctx));
    return mlir::AffineMap::get(n_loops, 0, e, mctx);
  };
  for (const auto& m : maps) affine.push_back(make_map(m));
  affine.push_back(make_map(out_map));
  llvm::SmallVector<mlir::utils::IteratorType> iters(n_loops, mlir::utils::IteratorType::reduction);
  for (size_t d = 0; d < out_map.size(); ++d) iters[d] = mlir::utils::IteratorType::parallel;
  llvm::SmallVector<Value> ins;
  for (const Tensor& t : in) ins.push_back(value_of(t));
  auto g = mlir::linalg::GenericOp::create(
      b, l, mlir::TypeRange{tensor_type(mctx, out)}, ins, mlir::ValueRange{acc}, affine, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        Value p = body(nb, nl, args.drop_back());
        mlir::linalg::YieldOp::create(nb, nl, mlir::arith::AddFOp::create(nb, nl, args.back(), p).getResult());
      });
  g->setAttr(quantized_dot::kAttr, b.getUnitAttr());
  if (int8) g->setAttr(quantized_dot::kFormatAttr, b.getStringAttr(int8));
  Tensor y = wrap(ctx, g.getResult(0), out);
  return drop_m || row_groups ? reshape(y, {M, N}) : y;
}

Value widen(mlir::OpBuilder& b, mlir::Location l, Value v) {
  mlir::Type f32 = b.getF32Type();
  if (llvm::isa<mlir::IntegerType>(v.getType())) return mlir::arith::SIToFPOp::create(b, l, f32, v);
  if (v.getType() == f32) return v;
  return mlir::arith::ExtFOp::create(b, l, f32, v);
}

// (nibble - 8) of i8 byte `q` as i8, the low (shift 0) or high (shift 4) one.
Value nibble(mlir::OpBuilder& b, mlir::Location l, Value q, int shift) {
  mlir::Type i8 = q.getType();
  auto c = [&](int64_t v) { return mlir::arith::ConstantOp::create(b, l, b.getIntegerAttr(i8, v)).getResult(); };
  Value n = shift ? mlir::arith::ShRUIOp::create(b, l, q, c(shift)).getResult() : q;
  n = mlir::arith::AndIOp::create(b, l, n, c(15));
  return mlir::arith::SubIOp::create(b, l, n, c(8));
}

Value mul(mlir::OpBuilder& b, mlir::Location l, Value x, Value y) {
  return mlir::arith::MulFOp::create(b, l, x, y);
}

Value i32(mlir::OpBuilder& b, mlir::Location l, Value v) {
  return mlir::arith::ExtSIOp::create(b, l, b.getI32Type(), v);
}

// Q4_0's byte j of a block holds elements j (low nibble) and j + 16 (high):
// x [M, K] as the blocks' two halves, each [M, K/32, 16].
std::pair<Tensor, Tensor> block_halves(const Tensor& x, int64_t M, int64_t K) {
  Tensor halves = reshape(x, {M, K / kQuantBlock, 2, 16});
  return {reshape(slice(halves, Axis(2), 0, 1), {M, K / kQuantBlock, 16}),
          reshape(slice(halves, Axis(2), 1, 2), {M, K / kQuantBlock, 16})};
}

// An exact integer product (|p| < 2^24) as f32 times `scale`.
Value scaled(mlir::OpBuilder& b, mlir::Location l, Value p, Value scale) {
  return mul(b, l, mlir::arith::SIToFPOp::create(b, l, b.getF32Type(), p), scale);
}

// Q4_0's integer product of x's bytes (halves a[0], a[1]) and W's nibbles
// (a[3]) scaled by x's and W's block scales (a[2], a[4]).
Value q4_int8_body(mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange a) {
  Value p = mlir::arith::AddIOp::create(
      b, l, mlir::arith::MulIOp::create(b, l, i32(b, l, a[0]), i32(b, l, nibble(b, l, a[3], 0))),
      mlir::arith::MulIOp::create(b, l, i32(b, l, a[1]), i32(b, l, nibble(b, l, a[3], 4))));
  return scaled(b, l, p, mul(b, l, a[2], widen(b, l, a[4])));
}

// Q8_0's integer product of x's and W's bytes (a[0], a[2]) scaled by x's and
// W's block scales (a[1], a[3]).
Value q8_int8_body(mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange a) {
  Value p = mlir::arith::MulIOp::create(b, l, i32(b, l, a[0]), i32(b, l, a[2]));
  return scaled(b, l, p, mul(b, l, a[1], widen(b, l, a[3])));
}

// Q8_0's f32 product: x (a[0]) times W's byte (a[1]) widened and its block
// scale (a[2]).
Value q8_f32_body(mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange a) {
  return mul(b, l, a[0], mul(b, l, widen(b, l, a[1]), widen(b, l, a[2])));
}

// Q4_0's f32 product: x's halves (a[0], a[1]) times W's low and high
// nibbles minus 8 (a[2]), scaled by W's block scale (a[3]).
Value q4_f32_body(mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange a) {
  Value lo = mul(b, l, a[0], widen(b, l, nibble(b, l, a[2], 0)));
  Value hi = mul(b, l, a[1], widen(b, l, nibble(b, l, a[2], 4)));
  return mul(b, l, mlir::arith::AddFOp::create(b, l, lo, hi), widen(b, l, a[3]));
}

// x [M, K] f32 (K a multiple of 32) -> (q i8 [M, K/32, 32], d f32 [M, K/32]):
// d = max|x| / 127 per block of 32, q = round(x / d) (0 where d is 0), so
// x ~= q * d. llama.cpp's quantize_row_q8_0 with an f32 scale.
std::pair<Tensor, Tensor> quantize_blocks(const Tensor& x, int64_t M, int64_t K) {
  const int64_t KB = K / kQuantBlock;
  Tensor xb = reshape(x, {M, KB, kQuantBlock});
  Tensor d = reduce_max(abs(xb), {2}) / 127.0;
  Tensor inv = select(ne(d, full(d.shape(), 0.0)), 1.0 / d, full(d.shape(), 0.0));
  Tensor q = convert(round(xb * reshape(inv, {M, KB, 1})), DType::kI8);
  return {q, d};
}

}  // namespace

QuantFormat quant_format(const Tensor& values, const Tensor& scales) {
  context_for("quantized weights", {&values, &scales});
  auto bad = [&](const std::string& why) {
    fail("quantized weights (" + shapes(values, scales) + "): " + why +
         " (int8 per channel: i8[n,k] with f32[n]; Q8_0: i8[n,k] with f16[n,k/32]; Q4_0: u8[n,k/2] with "
         "f16[n,k/32]; Q4_0x16: u8[n/16,k/32,4,16,4] with f16[n/16,k/32,16]; Q8_0x16: i8[n/16,k/32,8,16,4] with "
         "f16[n/16,k/32,16])");
  };
  if (values.rank() == 5) {
    // Q4_0x16: u8 [n/16, k/32, 4, 16, 4], Q8_0x16: i8 [n/16, k/32, 8, 16, 4];
    // both with f16 [n/16, k/32, 16].
    const bool q4 = values.dtype() == DType::kU8;
    const char* name = q4 ? "Q4_0x16" : "Q8_0x16";
    const int64_t groups = values.dim(0), kb = values.dim(1);
    if ((!q4 && values.dtype() != DType::kI8) || values.dim(2) != (q4 ? 4 : 8) || values.dim(3) != kQuantRowGroup ||
        values.dim(4) != 4)
      bad(std::string(name) + " values must be " + (q4 ? "u8[n/16, k/32, 4, 16, 4]" : "i8[n/16, k/32, 8, 16, 4]"));
    if (scales.dtype() != DType::kF16 || scales.rank() != 3 || scales.dim(0) != groups || scales.dim(1) != kb ||
        scales.dim(2) != kQuantRowGroup)
      bad(std::string(name) + " block scales must be f16[" + std::to_string(groups) + "," + std::to_string(kb) + ",16]");
    return q4 ? QuantFormat::kQ4_0x16 : QuantFormat::kQ8_0x16;
  }
  if (values.rank() != 2) bad("values must be a matrix [n, k] (or an x16 format's [n/16, k/32, g, 16, 4])");
  const int64_t n = values.dim(0);
  if (values.dtype() == DType::kI8 && scales.dtype() == DType::kF32) {
    if (scales.rank() != 1 || scales.dim(0) != n) bad("per-channel scales must be f32[" + std::to_string(n) + "]");
    return QuantFormat::kInt8PerChannel;
  }
  const bool q8 = values.dtype() == DType::kI8, q4 = values.dtype() == DType::kU8;
  if (!(q8 || q4) || scales.dtype() != DType::kF16) bad("unknown combination of dtypes");
  const int64_t k = q4 ? values.dim(1) * 2 : values.dim(1);
  if (k % kQuantBlock != 0) bad("k = " + std::to_string(k) + " is not a multiple of the block length 32");
  if (scales.rank() != 2 || scales.dim(0) != n || scales.dim(1) != k / kQuantBlock)
    bad("block scales must be f16[" + std::to_string(n) + "," + std::to_string(k / kQuantBlock) + "]");
  return q4 ? QuantFormat::kQ4_0 : QuantFormat::kQ8_0;
}

Tensor dequantize(const Tensor& values, const Tensor& scales) {
  const QuantFormat f = quant_format(values, scales);
  const auto [n, k] = weight_dims(f, values);
  switch (f) {
    case QuantFormat::kInt8PerChannel:
      return convert(values, DType::kF32) * reshape(scales, {n, 1});
    case QuantFormat::kQ8_0:
      return reshape(convert(reshape(values, {n, k / kQuantBlock, kQuantBlock}), DType::kF32) *
                         reshape(convert(scales, DType::kF32), {n, k / kQuantBlock, 1}),
                     {n, k});
    case QuantFormat::kQ4_0: {
      // Bytes [n, k/32, 16] -> low and high nibbles, each [n, k/32, 1, 16],
      // joined along a new axis of 2 (the block's two halves).
      Tensor bytes = reshape(values, {n, k / kQuantBlock, 1, 16});
      Tensor lo = bitwise_and(bytes, full(bytes.shape(), 15.0));
      Tensor hi = shift_right_logical(bytes, full(bytes.shape(), 4.0));
      Tensor q = convert(concatenate({lo, hi}, 2), DType::kF32) - 8.0;
      Tensor s = reshape(convert(scales, DType::kF32), {n, k / kQuantBlock, 1, 1});
      return reshape(q * s, {n, k});
    }
    case QuantFormat::kQ4_0x16:
    case QuantFormat::kQ8_0x16: {
      auto [v, sc] = plain_rows(values, scales);
      return dequantize(v, sc);
    }
  }
  return values;
}

namespace {

// Plain Q8_0 / Q4_0 rows times f32 activations read 16 rows at a time
// (the prompt form below): Q4_0 from kQuantizedF32GroupMinRows rows of x,
// Q8_0 past kQuantizedDotMaxRows, where it used to be dequantized whole.
// Measured on Zen 5, one core, [m,768]·W[2048,768]ᵀ GFLOP/s, the decode
// tiles (each row of x widening W again) / the row groups: Q4_0 m = 3 36 /
// 43, 4 59 / 52, 8 59 / 69, 16 58 / 80-84 (Zen 3's code there: m = 4 28 /
// 46, 16 27 / 83); Q8_0 m = 4 82 / 57, 8 82 / 75, 16 81 / 70-86 (Zen 3's
// code 74 / 41, 74 / 62, 74 / 74): its bytes widen in one instruction.
bool plain_f32_row_groups(QuantFormat f, int64_t M, int64_t N, const QuantizedMatmulOptions& options) {
  if (options.activations == QuantizedActivations::kInt8Blocks || N % kQuantRowGroup != 0) return false;
  return (f == QuantFormat::kQ4_0 && M >= kQuantizedF32GroupMinRows) ||
         (f == QuantFormat::kQ8_0 && M > kQuantizedDotMaxRows);
}

}  // namespace

bool quantized_matmul_in_registers(QuantFormat format, int64_t rows, int64_t n, int64_t k,
                                   const QuantizedMatmulOptions& options) {
  if (format == QuantFormat::kQ4_0x16 || format == QuantFormat::kQ8_0x16) return true;
  if (rows <= kQuantizedDotMaxRows) return true;
  if (options.activations != QuantizedActivations::kInt8Blocks) return plain_f32_row_groups(format, rows, n, options);
  if (k % kQuantBlock != 0) return false;
  return k >= kQuantizedPromptMinK || (format == QuantFormat::kQ4_0 && n % 8 == 0) ||
         (format == QuantFormat::kQ8_0 && n % 16 == 0);
}

Tensor quantized_matmul(const Tensor& x, const Tensor& values, const Tensor& scales,
                        const QuantizedMatmulOptions& options) {
  context_for("quantized_matmul", {&x, &values, &scales});
  const QuantFormat f = quant_format(values, scales);
  const auto [N, K] = weight_dims(f, values);
  if (x.dtype() != DType::kF32 || x.rank() < 1 || x.dim(-1) != K)
    fail("quantized_matmul(" + x.shape().to_string() + ", " + shapes(values, scales) + "): x must be f32[..., " +
         std::to_string(K) + "]");
  int64_t M = 1;
  std::vector<int64_t> out_dims;
  for (int i = 0; i + 1 < x.rank(); ++i) {
    M *= x.dim(i);
    out_dims.push_back(x.dim(i));
  }
  out_dims.push_back(N);
  Tensor x2 = reshape(x, {M, K});
  Tensor y;
  const int64_t KB = K / kQuantBlock;
  const bool x16 = f == QuantFormat::kQ4_0x16 || f == QuantFormat::kQ8_0x16;
  if (x16 && options.activations != QuantizedActivations::kInt8Blocks) {
    // f32 activations, loops (m, R, i, kb, g, t) as below: W widened in
    // registers (the CPU's f32_rows_kernel.cc; prompts: each row group
    // dequantized once on the stack).
    if (f == QuantFormat::kQ4_0x16) {
      auto [lo, hi] = block_halves(x2, M, K);
      y = emit_contraction("quantized_matmul", {reshape(lo, {M, KB, 4, 4}), reshape(hi, {M, KB, 4, 4}), values, scales},
                           {{0, 3, 4, 5}, {0, 3, 4, 5}, {1, 3, 4, 2, 5}, {1, 3, 2}}, 6, M, N, q4_f32_body,
                           quantized_dot::kQ4_0x16F32, /*row_groups=*/true);
    } else {
      y = emit_contraction("quantized_matmul", {reshape(x2, {M, KB, 8, 4}), values, scales},
                           {{0, 3, 4, 5}, {1, 3, 4, 2, 5}, {1, 3, 2}}, 6, M, N, q8_f32_body, quantized_dot::kQ8_0x16F32,
                           /*row_groups=*/true);
    }
  } else if (plain_f32_row_groups(f, M, N, options)) {
    // f32 activations, a prompt: loops (m, R, i, kb, g, t) as the x16
    // forms', W's plain rows read as [N/16, 16, KB, 8 or 4, 4] (the CPU's
    // f32_rows_kernel.cc dequantizes one group of 16 rows at a time on the
    // stack: W is never dequantized whole).
    const int64_t NR = N / kQuantRowGroup;
    Tensor s = reshape(scales, {NR, kQuantRowGroup, KB});
    if (f == QuantFormat::kQ4_0) {
      auto [lo, hi] = block_halves(x2, M, K);
      y = emit_contraction("quantized_matmul",
                           {reshape(lo, {M, KB, 4, 4}), reshape(hi, {M, KB, 4, 4}),
                            reshape(values, {NR, kQuantRowGroup, KB, 4, 4}), s},
                           {{0, 3, 4, 5}, {0, 3, 4, 5}, {1, 2, 3, 4, 5}, {1, 2, 3}}, 6, M, N, q4_f32_body,
                           quantized_dot::kQ4_0F32, /*row_groups=*/true);
    } else {
      y = emit_contraction("quantized_matmul",
                           {reshape(x2, {M, KB, 8, 4}), reshape(values, {NR, kQuantRowGroup, KB, 8, 4}), s},
                           {{0, 3, 4, 5}, {1, 2, 3, 4, 5}, {1, 2, 3}}, 6, M, N, q8_f32_body, quantized_dot::kQ8_0F32,
                           /*row_groups=*/true);
    }
  } else if (f == QuantFormat::kQ4_0x16) {
    // Loops (m, R, i, kb, g, t): row 16R + i of W times x's block kb, whose
    // bytes 4g + t hold elements 4g + t (low nibble, x's first half) and
    // 16 + 4g + t (high nibble, its second half). Inputs in the order of the
    // plain Q4_0 product: x's halves [M, KB, 4, 4], x's scales, W's bytes
    // [N/16, KB, 4, 16, 4] and scales [N/16, KB, 16].
    auto [xq, xd] = quantize_blocks(x2, M, K);
    auto [lo, hi] = block_halves(xq, M, K);
    y = emit_contraction("quantized_matmul", {reshape(lo, {M, KB, 4, 4}), reshape(hi, {M, KB, 4, 4}), xd, values, scales},
                         {{0, 3, 4, 5}, {0, 3, 4, 5}, {0, 3}, {1, 3, 4, 2, 5}, {1, 3, 2}}, 6, M, N,
                         q4_int8_body,
                         quantized_dot::kQ4_0x16, /*row_groups=*/true);
  } else if (f == QuantFormat::kQ8_0x16) {
    // Loops (m, R, i, kb, g, t): row 16R + i of W times x's block kb, bytes
    // 4g + t of both. Inputs as the plain Q8_0 product's: x's bytes [M, KB,
    // 8, 4], x's scales, W's bytes [N/16, KB, 8, 16, 4] and scales [N/16, KB, 16].
    auto [xq, xd] = quantize_blocks(x2, M, K);
    y = emit_contraction("quantized_matmul", {reshape(xq, {M, KB, 8, 4}), xd, values, scales},
                         {{0, 3, 4, 5}, {0, 3}, {1, 3, 4, 2, 5}, {1, 3, 2}}, 6, M, N, q8_int8_body, quantized_dot::kQ8_0x16,
                         /*row_groups=*/true);
  } else if (!quantized_matmul_in_registers(f, M, N, K, options)) {
    y = dot_general(x2, dequantize(values, scales), DotDims{{}, {}, {1}, {1}});
  } else if (options.activations == QuantizedActivations::kInt8Blocks && K % kQuantBlock == 0) {
    // Loops (m, n, kb, j): integer products of x's and W's bytes, scaled by
    // x's block scale (and W's: Q formats). Inputs in the order the CPU's
    // int8 kernels read them: x's bytes, x's scales, W's bytes, W's scales.
    auto [xq, xd] = quantize_blocks(x2, M, K);
    if (f == QuantFormat::kQ4_0) {
      // j < 16: x's bytes are read as the blocks' two halves.
      auto [lo, hi] = block_halves(xq, M, K);
      y = emit_contraction("quantized_matmul", {lo, hi, xd, reshape(values, {N, KB, 16}), scales},
                           {{0, 2, 3}, {0, 2, 3}, {0, 2}, {1, 2, 3}, {1, 2}}, 4, M, N,
                           q4_int8_body,
                           quantized_dot::kQ4_0);
    } else {
      const bool q8 = f == QuantFormat::kQ8_0;
      std::vector<Tensor> in = {xq, xd, reshape(values, {N, KB, kQuantBlock})};
      std::vector<std::vector<unsigned>> maps = {{0, 2, 3}, {0, 2}, {1, 2, 3}};
      if (q8) {
        in.push_back(scales);
        maps.push_back({1, 2});
      }
      y = emit_contraction("quantized_matmul", in, maps, 4, M, N,
                           [q8](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange a) {
                             Value p = mlir::arith::MulIOp::create(b, l, i32(b, l, a[0]), i32(b, l, a[2]));
                             return scaled(b, l, p, q8 ? mul(b, l, a[1], widen(b, l, a[3])) : a[1]);
                           },
                           q8 ? quantized_dot::kQ8_0 : quantized_dot::kInt8);
      if (!q8) y = y * reshape(scales, {1, N});
    }
  } else if (f == QuantFormat::kInt8PerChannel) {
    // Loops (m, n, k); the per-channel scale multiplies the [M, N] result.
    y = emit_contraction("quantized_matmul", {x2, values}, {{0, 2}, {1, 2}}, 3, M, N,
                         [](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange a) {
                           return mul(b, l, a[0], widen(b, l, a[1]));
                         });
    y = y * reshape(scales, {1, N});
  } else if (f == QuantFormat::kQ8_0) {
    // Loops (m, n, kb, j): x[m, kb, j] * values[n, kb, j] * scales[n, kb].
    y = emit_contraction("quantized_matmul",
                         {reshape(x2, {M, KB, kQuantBlock}), reshape(values, {N, KB, kQuantBlock}), scales},
                         {{0, 2, 3}, {1, 2, 3}, {1, 2}}, 4, M, N, q8_f32_body);
  } else {
    // Loops (m, n, kb, j), j < 16: byte j of a block weighs x's element j
    // (low nibble) and j + 16 (high nibble): x is read as its two halves.
    auto [x_lo, x_hi] = block_halves(x2, M, K);
    y = emit_contraction("quantized_matmul", {x_lo, x_hi, reshape(values, {N, KB, 16}), scales},
                         {{0, 2, 3}, {0, 2, 3}, {1, 2, 3}, {1, 2}}, 4, M, N, q4_f32_body);
  }
  return reshape(y, std::span<const int64_t>(out_dims));
}

}  // namespace radix
