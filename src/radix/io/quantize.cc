#include "radix/io/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "radix/core/half.h"

namespace radix::io {

namespace {

Status check_blocked(const char* what, size_t count, int64_t n, int64_t k) {
  if (n <= 0 || k <= 0 || k % kQuantBlock != 0)
    return invalid_argument(std::string(what) + ": a [" + std::to_string(n) + ", " + std::to_string(k) +
                            "] matrix: k must be a positive multiple of 32");
  if (count != static_cast<size_t>(n * k))
    return invalid_argument(std::string(what) + ": " + std::to_string(count) + " values for a [" +
                            std::to_string(n) + ", " + std::to_string(k) + "] matrix");
  return Status();
}

// std::roundf(v) (halves away from zero) for |v| < 2^31, in steps the
// compiler vectorizes (std::roundf is a library call per value, which made
// quantizing on load ~4 ns per weight): v minus its truncation is exact.
inline int32_t round_half_away(float v) {
  const auto i = static_cast<int32_t>(v);
  const float frac = v - static_cast<float>(i);
  return i + static_cast<int32_t>(frac >= 0.5f) - static_cast<int32_t>(frac <= -0.5f);
}

QuantizedMatrix allocate(QuantFormat f, int64_t n, int64_t k) {
  QuantizedMatrix m;
  m.values_shape = quantized_values_shape(f, n, k);
  m.scales_shape = quantized_scales_shape(f, n, k);
  m.values.resize(m.values_shape.byte_size());
  m.scales.resize(m.scales_shape.byte_size());
  return m;
}

void put_f16(QuantizedMatrix& m, size_t block, float d) {
  const uint16_t bits = float_to_f16(d);
  std::memcpy(m.scales.data() + 2 * block, &bits, 2);
}
float get_f16(const QuantizedMatrix& m, size_t block) {
  uint16_t bits;
  std::memcpy(&bits, m.scales.data() + 2 * block, 2);
  return f16_to_float(bits);
}

// Q4_0x16 <-> Q4_0, Q8_0x16 <-> Q8_0 (trace/ops_quant.h): byte 4g + t of
// block b of row 16R + i sits at values[R, b, g, i, t], its scale at
// scales[R, b, i]. `to_x16` moves plain -> interleaved, otherwise back; n,
// kb of the matrix, `bytes` per block (16 or 32).
void move_rows(const QuantizedMatrix& from, QuantizedMatrix& to, int64_t n, int64_t kb, int64_t bytes, bool to_x16) {
  const int64_t groups = bytes / 4;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t R = r / kQuantRowGroup, i = r % kQuantRowGroup;
    for (int64_t b = 0; b < kb; ++b) {
      const size_t plain_scale = static_cast<size_t>(r * kb + b), x16_scale = static_cast<size_t>((R * kb + b) * kQuantRowGroup + i);
      const size_t ps = 2 * (to_x16 ? plain_scale : x16_scale), pd = 2 * (to_x16 ? x16_scale : plain_scale);
      std::memcpy(to.scales.data() + pd, from.scales.data() + ps, 2);
      for (int64_t g = 0; g < groups; ++g) {  // 4 bytes at a time
        const size_t plain = static_cast<size_t>((r * kb + b) * bytes + 4 * g);
        const size_t x16 = static_cast<size_t>((((R * kb + b) * groups + g) * kQuantRowGroup + i) * 4);
        std::memcpy(to.values.data() + (to_x16 ? x16 : plain), from.values.data() + (to_x16 ? plain : x16), 4);
      }
    }
  }
}

}  // namespace

Result<QuantizedMatrix> interleave_rows(const QuantizedMatrix& q) {
  const Shape& v = q.values_shape;
  const bool q4 = v.dtype() == DType::kU8;
  if ((!q4 && v.dtype() != DType::kI8) || v.rank() != 2 || q.scales_shape.dtype() != DType::kF16)
    return invalid_argument("interleave_rows: " + v.to_string() + ", " + q.scales_shape.to_string() +
                            " is not a Q4_0 or Q8_0 matrix (u8[n, k/2] or i8[n, k] with f16[n, k/32])");
  const int64_t n = v.dim(0), k = q4 ? v.dim(1) * 2 : v.dim(1);
  if (n % kQuantRowGroup != 0)
    return invalid_argument("interleave_rows: " + v.to_string() + ": n = " + std::to_string(n) +
                            " is not a multiple of 16");
  QuantizedMatrix out = allocate(q4 ? QuantFormat::kQ4_0x16 : QuantFormat::kQ8_0x16, n, k);
  if (q.values.size() != out.values.size() || q.scales.size() != out.scales.size())
    return invalid_argument("interleave_rows: " + std::to_string(q.values.size()) + " bytes and " +
                            std::to_string(q.scales.size()) + " scale bytes for " + v.to_string());
  move_rows(q, out, n, k / kQuantBlock, q4 ? 16 : 32, /*to_x16=*/true);
  return out;
}

QuantizedMatrix quantize_int8(std::span<const float> w, int64_t n, int64_t k) {
  QuantizedMatrix m = allocate(QuantFormat::kInt8PerChannel, n, k);
  for (int64_t r = 0; r < n; ++r) {
    const float* row = w.data() + r * k;
    float amax = 0;
    for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::fabs(row[c]));
    const float scale = amax / 127.0f, inv = scale > 0 ? 1.0f / scale : 0.0f;
    std::memcpy(m.scales.data() + 4 * r, &scale, 4);
    for (int64_t c = 0; c < k; ++c)
      m.values[static_cast<size_t>(r * k + c)] = static_cast<std::byte>(static_cast<int8_t>(round_half_away(row[c] * inv)));
  }
  return m;
}

Result<QuantizedMatrix> quantize_q8_0(std::span<const float> w, int64_t n, int64_t k) {
  RADIX_RETURN_IF_ERROR(check_blocked("quantize_q8_0", w.size(), n, k));
  QuantizedMatrix m = allocate(QuantFormat::kQ8_0, n, k);
  for (size_t b = 0; b < w.size() / kQuantBlock; ++b) {
    const float* x = w.data() + kQuantBlock * b;
    float amax = 0;
    for (int64_t j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    put_f16(m, b, d);
    int8_t q[kQuantBlock];  // written whole, then copied: the loop vectorizes
    for (int64_t j = 0; j < kQuantBlock; ++j) q[j] = static_cast<int8_t>(round_half_away(x[j] * id));
    std::memcpy(m.values.data() + kQuantBlock * b, q, sizeof q);
  }
  return m;
}

Result<QuantizedMatrix> quantize_q4_0(std::span<const float> w, int64_t n, int64_t k) {
  RADIX_RETURN_IF_ERROR(check_blocked("quantize_q4_0", w.size(), n, k));
  QuantizedMatrix m = allocate(QuantFormat::kQ4_0, n, k);
  for (size_t b = 0; b < w.size() / kQuantBlock; ++b) {
    const float* x = w.data() + kQuantBlock * b;
    float amax = 0, max = 0;
    for (int64_t j = 0; j < kQuantBlock; ++j)
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    const float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
    put_f16(m, b, d);
    uint8_t q[kQuantBlock / 2];  // written whole, then copied: the loop vectorizes
    for (int64_t j = 0; j < kQuantBlock / 2; ++j) {
      const auto q0 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x[j] * id + 8.5f)));
      const auto q1 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x[j + 16] * id + 8.5f)));
      q[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    std::memcpy(m.values.data() + 16 * b, q, sizeof q);
  }
  return m;
}

namespace {
Result<QuantizedMatrix> split_blocks(const char* what, QuantFormat f, size_t block_bytes,
                                     std::span<const std::byte> blocks, int64_t n, int64_t k) {
  if (n <= 0 || k <= 0 || k % kQuantBlock != 0)
    return invalid_argument(std::string(what) + ": a [" + std::to_string(n) + ", " + std::to_string(k) +
                            "] tensor: k must be a positive multiple of 32");
  const size_t count = static_cast<size_t>(n * (k / kQuantBlock));
  if (blocks.size() != count * block_bytes)
    return invalid_argument(std::string(what) + ": " + std::to_string(blocks.size()) + " bytes for a [" +
                            std::to_string(n) + ", " + std::to_string(k) + "] tensor, which takes " +
                            std::to_string(count) + " blocks of " + std::to_string(block_bytes) + " bytes");
  QuantizedMatrix m = allocate(f, n, k);
  const size_t vb = block_bytes - 2;
  for (size_t b = 0; b < count; ++b) {
    const std::byte* p = blocks.data() + b * block_bytes;
    std::memcpy(m.scales.data() + 2 * b, p, 2);
    std::memcpy(m.values.data() + vb * b, p + 2, vb);
  }
  return m;
}
}  // namespace

Result<QuantizedMatrix> split_gguf_q8_0(std::span<const std::byte> blocks, int64_t n, int64_t k) {
  return split_blocks("GGUF Q8_0", QuantFormat::kQ8_0, 34, blocks, n, k);
}
Result<QuantizedMatrix> split_gguf_q4_0(std::span<const std::byte> blocks, int64_t n, int64_t k) {
  return split_blocks("GGUF Q4_0", QuantFormat::kQ4_0, 18, blocks, n, k);
}

Result<QuantizedMatrix> quantize(QuantFormat f, std::span<const float> w, int64_t n, int64_t k) {
  switch (f) {
    case QuantFormat::kInt8PerChannel: return quantize_int8(w, n, k);
    case QuantFormat::kQ8_0: return quantize_q8_0(w, n, k);
    case QuantFormat::kQ4_0: return quantize_q4_0(w, n, k);
    case QuantFormat::kQ4_0x16: {
      RADIX_ASSIGN_OR_RETURN(QuantizedMatrix q, quantize_q4_0(w, n, k));
      return interleave_rows(q);
    }
    case QuantFormat::kQ8_0x16: {
      RADIX_ASSIGN_OR_RETURN(QuantizedMatrix q, quantize_q8_0(w, n, k));
      return interleave_rows(q);
    }
  }
  return invalid_argument("quantize: unknown format");
}

std::vector<float> round_to_int8_blocks(std::span<const float> x) {
  std::vector<float> out(x.size());
  const size_t block = static_cast<size_t>(kQuantBlock);
  for (size_t b = 0; b + block <= x.size(); b += block) {
    float amax = 0;
    for (size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(x[b + j]));
    // The traced quantizer's arithmetic, step by step (f32).
    const float d = amax / 127.0f, inv = d != 0 ? 1.0f / d : 0.0f;
    for (size_t j = 0; j < block; ++j) out[b + j] = std::roundf(x[b + j] * inv) * d;
  }
  return out;
}

std::vector<float> dequantize(const QuantizedMatrix& m) {
  if (m.values_shape.rank() == 5) {
    const int64_t n = m.values_shape.dim(0) * kQuantRowGroup, k = m.values_shape.dim(1) * kQuantBlock;
    const bool q4 = m.values_shape.dtype() == DType::kU8;
    QuantizedMatrix plain = allocate(q4 ? QuantFormat::kQ4_0 : QuantFormat::kQ8_0, n, k);
    move_rows(m, plain, n, k / kQuantBlock, q4 ? 16 : 32, /*to_x16=*/false);
    return dequantize(plain);
  }
  const int64_t n = m.values_shape.dim(0);
  const bool q4 = m.values_shape.dtype() == DType::kU8;
  const int64_t k = q4 ? m.values_shape.dim(1) * 2 : m.values_shape.dim(1);
  std::vector<float> w(static_cast<size_t>(n * k));
  if (m.scales_shape.dtype() == DType::kF32) {
    for (int64_t r = 0; r < n; ++r) {
      float s;
      std::memcpy(&s, m.scales.data() + 4 * r, 4);
      for (int64_t c = 0; c < k; ++c)
        w[static_cast<size_t>(r * k + c)] = s * static_cast<float>(static_cast<int8_t>(m.values[static_cast<size_t>(r * k + c)]));
    }
    return w;
  }
  for (size_t b = 0; b < w.size() / kQuantBlock; ++b) {
    const float d = get_f16(m, b);
    for (int64_t j = 0; j < kQuantBlock; ++j) {
      int q;
      if (!q4) {
        q = static_cast<int8_t>(m.values[kQuantBlock * b + j]);
      } else {
        const auto byte = static_cast<uint8_t>(m.values[16 * b + (j % 16)]);
        q = (j < 16 ? byte & 15 : byte >> 4) - 8;
      }
      w[kQuantBlock * b + j] = d * static_cast<float>(q);
    }
  }
  return w;
}

}  // namespace radix::io
