#include "radix/core/half.h"

#include <cmath>
#include <cstring>

namespace radix {

namespace {
uint32_t bits_of(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
float float_of(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
}  // namespace

float bf16_to_float(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bf16(float value) {
  uint32_t u = bits_of(value);
  if (std::isnan(value)) return static_cast<uint16_t>((u >> 16) | 0x40);  // keep it a quiet NaN
  u += 0x7FFF + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

float f16_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FFu;
  if (exp == 0) {
    if (mant == 0) return float_of(sign);
    float f = std::ldexp(static_cast<float>(mant), -24);  // subnormal
    return sign ? -f : f;
  }
  if (exp == 31) return float_of(sign | 0x7F800000u | (mant << 13));
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_f16(float value) {
  uint32_t u = bits_of(value);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  float a = std::fabs(value);
  if (std::isnan(value)) return static_cast<uint16_t>(sign | 0x7E00u);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to infinity
  if (a < 6.103515625e-05f) {  // subnormal range: multiples of 2^-24
    float q = std::nearbyint(a * 16777216.0f);  // default rounding mode: nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));
  }
  uint32_t ua = bits_of(a);
  uint32_t exp = (ua >> 23) - 112, mant = ua & 0x7FFFFFu;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // nearest even; may carry into exp
  return static_cast<uint16_t>(sign | h);
}

}  // namespace radix
