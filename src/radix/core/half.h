// Host-side conversions for the 16-bit float formats (f16, bf16), stored as
// raw uint16_t bits. Round to nearest even; NaN and infinities preserved.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cstdint>

namespace radix {

float f16_to_float(uint16_t bits);
uint16_t float_to_f16(float value);
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);

}  // namespace radix
