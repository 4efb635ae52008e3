// Internal helpers shared by the nn layers: argument checks that throw a
// TraceError naming the layer and every operand shape, as the ops do.
#pragma once

#include <initializer_list>
#include <string>

#include "radix/trace/tensor.h"
#include "radix/trace/trace_error.h"

namespace radix::nn::detail {

// "layer(f32[b=2,d=4], f32[d=4,o=8])"
inline std::string describe(const char* layer, std::initializer_list<const Tensor*> operands) {
  std::string s = std::string(layer) + "(";
  bool first = true;
  for (const Tensor* t : operands) {
    if (!t) continue;
    if (!first) s += ", ";
    s += t->shape().to_string();
    first = false;
  }
  return s + ")";
}

// Throws "layer(shapes...): why" unless ok.
inline void require(bool ok, const char* layer, std::initializer_list<const Tensor*> operands, const std::string& why) {
  if (!ok) throw TraceError(describe(layer, operands) + ": " + why);
}

// f16 / bf16 layers compute in f32 and round once at the end.
// convert(x, d), or x itself when it already has dtype d (no op emitted).
Tensor as_dtype(const Tensor& x, DType d);

inline DType compute_dtype(DType d) { return (d == DType::kF16 || d == DType::kBF16) ? DType::kF32 : d; }

}  // namespace radix::nn::detail
