// Normalization layers over one axis (index or tag; default the last).
// f16 / bf16 inputs are normalized in f32 and rounded once to x's dtype;
// f32 / f64 compute in their own dtype. Weights may have any float dtype
// (they are converted to the compute dtype) and are rank 1, applied along
// `axis` by position (their tags are ignored).
#pragma once

#include <optional>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix::nn {

// Llama's RMSNorm: x * rsqrt(mean(x^2, axis) + eps) * weight.
// x[..., d, ...], weight[d] -> x's shape and dtype.
Tensor rms_norm(const Tensor& x, const Tensor& weight, const Axis& axis = -1, double eps = 1e-6);
// Without a weight (scale 1).
Tensor rms_norm(const Tensor& x, const Axis& axis = -1, double eps = 1e-6);

// LayerNorm: (x - mean) * rsqrt(var + eps) * scale + bias, with the biased
// (population) variance mean((x - mean)^2). scale[d] and bias[d] optional.
Tensor layer_norm(const Tensor& x, const std::optional<Tensor>& scale = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, const Axis& axis = -1, double eps = 1e-5);

template <class T> struct RmsNorm {
  T weight;  // [d]
  template <class V> void visit(V&& v) { v("weight", weight); }
  Tensor forward(const Tensor& x) const { return rms_norm(x, weight); }  // last axis, eps 1e-6
};
template <class T> struct LayerNorm {
  T scale, bias;  // [d]
  template <class V> void visit(V&& v) { v("scale", scale); v("bias", bias); }
  Tensor forward(const Tensor& x) const { return layer_norm(x, scale, bias); }  // last axis, eps 1e-5
};

}  // namespace radix::nn
