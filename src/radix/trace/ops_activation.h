// Activations and normalizing maps, floats only. Each is composed of
// elementwise ops (fused into one loop by the backend) and, for the softmax
// family, reductions over one axis; all are the numerically stable forms.
#pragma once

#include "radix/trace/tensor.h"

namespace radix {

// x if x > 0 else alpha * x.
Tensor leaky_relu(const Tensor& x, double alpha = 0.01);
// x if x > 0 else alpha * (exp(x) - 1), with expm1 (accurate near 0).
Tensor elu(const Tensor& x, double alpha = 1.0);
enum class GeluForm {
  kErf,   // 0.5 x (1 + erf(x / sqrt 2)): the exact definition
  kTanh,  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): GPT-2's approximation
};
Tensor gelu(const Tensor& x, GeluForm form = GeluForm::kErf);
// x * sigmoid(1.702 x) (CLIP's approximation of gelu).
Tensor quick_gelu(const Tensor& x);
// x * sigmoid(x), a.k.a. swish.
Tensor silu(const Tensor& x);
// silu(gate) * up: the gated unit of Llama's MLP. gate and up broadcast.
Tensor swiglu(const Tensor& gate, const Tensor& up);
// The same on one tensor whose `axis` holds [gate | up] halves (even size):
// [..., 2n, ...] -> [..., n, ...].
Tensor swiglu(const Tensor& x, const Axis& axis);
// log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): no overflow for large x.
Tensor softplus(const Tensor& x);

// exp(x - max) / sum(exp(x - max)) along `axis`; same shape as x. A row that
// is all -inf gives NaN (0 / 0), as in JAX.
Tensor softmax(const Tensor& x, const Axis& axis);
// x - logsumexp(x, axis), computed without forming softmax.
Tensor log_softmax(const Tensor& x, const Axis& axis);
// log(sum(exp(x))) over `axis`, the axis removed: max + log(sum(exp(x - max))).
// All -inf gives -inf (not NaN); +inf anywhere gives +inf.
Tensor logsumexp(const Tensor& x, const Axis& axis);

}  // namespace radix
