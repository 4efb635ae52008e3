// Elementwise math beyond ops.h: powers and remainders, rounding, trig and
// special functions, predicates, bitwise and logical ops. Each op is one
// linalg.generic (fused and vectorized like every elementwise op); binary ops
// broadcast by ops.h's rules. Misuse throws TraceError naming op and shapes.
#pragma once

#include "radix/trace/tensor.h"

namespace radix {

// ---------------------------------------------------------------- arithmetic
// pow(a, b), result dtype a's:
//  * float ^ float (same dtype): IEEE pow;
//  * float ^ integer: the exponent converted to a's dtype, then pow;
//  * integer ^ integer (same dtype): exact, wrapping like repeated
//    multiplication; a negative exponent gives 0, except 1 ^ n = 1 and
//    (-1) ^ n = +-1 (XLA's rule).
Tensor pow(const Tensor& a, const Tensor& b);
// C's fmod: a - trunc(a / b) * b, the sign of a. Integers never trap:
// x % 0 = x and INT_MIN % -1 = 0.
Tensor fmod(const Tensor& a, const Tensor& b);
// Python's / NumPy's remainder: the sign of b (floor division). Same
// integer edge cases as fmod.
Tensor remainder(const Tensor& a, const Tensor& b);
// min(max(x, lo), hi); lo and hi broadcast against x (same dtype).
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi);
Tensor clamp(const Tensor& x, double lo, double hi);  // bounds must fit x's dtype
// -1, 0 or +1 (floats: +-0 and NaN are returned as they are).
Tensor sign(const Tensor& x);

// ---------------------------------------------------------------- rounding (floats; integers pass through)
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
enum class RoundMode {
  kHalfAwayFromZero,  // 2.5 -> 3, -2.5 -> -3 (C's round)
  kHalfToEven,        // 2.5 -> 2, 3.5 -> 4 (banker's rounding, IEEE roundeven)
};
Tensor round(const Tensor& x, RoundMode mode = RoundMode::kHalfAwayFromZero);

// ---------------------------------------------------------------- special functions (floats only)
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);  // exp(x) - 1, accurate near 0
Tensor log1p(const Tensor& x);  // log(1 + x), accurate near 0
Tensor erf(const Tensor& x);

// ---------------------------------------------------------------- predicates -> bool
// Integers and bools are always finite, never NaN or infinite.
Tensor is_finite(const Tensor& x);
Tensor is_nan(const Tensor& x);
Tensor is_inf(const Tensor& x);

// ---------------------------------------------------------------- bitwise (integers and bools)
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_not(const Tensor& x);
// Shifts by b (same dtype as a). Never poison: a shift by a negative amount
// or by >= the bit width gives 0 for left and logical shifts and the sign
// fill (0 or -1) for the arithmetic shift, as XLA.
Tensor shift_left(const Tensor& a, const Tensor& b);
Tensor shift_right_logical(const Tensor& a, const Tensor& b);
Tensor shift_right_arithmetic(const Tensor& a, const Tensor& b);
// Number of set bits / leading zero bits, in x's dtype (integers only).
Tensor popcount(const Tensor& x);
Tensor count_leading_zeros(const Tensor& x);
// Reinterprets the bits as another dtype of the same width (not bool).
Tensor bitcast(const Tensor& x, DType dtype);

// ---------------------------------------------------------------- logical (bools only)
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);

}  // namespace radix
