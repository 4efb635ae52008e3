// Activations (ops_activation.h), composed from traced ops: the backend's
// elementwise fusion turns each chain into one vectorized loop.
#include "radix/trace/ops_activation.h"

#include <cmath>

#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;

namespace {
void check_float(const char* op, const Tensor& x) {
  context_for(op, {&x});
  require_float(op, x);
}

// The stabilizing shift of the softmax family: max over `axis` (kept as a
// size-1 axis), with -inf rows shifted by 0 instead (so -inf - -inf never
// makes NaN) — finite max values are unchanged.
Tensor stable_max(const Tensor& x, const Axis& axis) {
  Tensor m = reduce_max(x, {axis}, ReduceOptions{.keep_dims = true});
  return select(is_finite(m), m, full(m.shape(), 0.0));
}
}  // namespace

Tensor leaky_relu(const Tensor& x, double alpha) {
  check_float("leaky_relu", x);
  return select(gt(x, full(Shape(x.dtype()), 0.0)), x, x * alpha);
}

Tensor elu(const Tensor& x, double alpha) {
  check_float("elu", x);
  return select(gt(x, full(Shape(x.dtype()), 0.0)), x, expm1(x) * alpha);
}

Tensor gelu(const Tensor& x, GeluForm form) {
  check_float("gelu", x);
  if (form == GeluForm::kErf) return x * 0.5 * (erf(x * M_SQRT1_2) + 1.0);
  const double k = std::sqrt(2.0 / M_PI);
  return x * 0.5 * (tanh((x + x * x * x * 0.044715) * k) + 1.0);
}

Tensor quick_gelu(const Tensor& x) {
  check_float("quick_gelu", x);
  return x * sigmoid(x * 1.702);
}

Tensor silu(const Tensor& x) {
  check_float("silu", x);
  return x * sigmoid(x);
}

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  context_for("swiglu", {&gate, &up});
  require_float("swiglu", gate);
  require_same_dtype("swiglu", {&gate, &up});
  return silu(gate) * up;
}

Tensor swiglu(const Tensor& x, const Axis& axis) {
  check_float("swiglu", x);
  const int a = x.axis(axis);
  const int64_t n = x.dim(a);
  if (n % 2 != 0)
    fail(describe("swiglu", {&x}) + ": axis " + axis.to_string() + " has odd size " + std::to_string(n) +
         "; it must hold the gate and up halves");
  std::vector<Tensor> halves = split(x, a, {n / 2, n / 2});
  return silu(halves[0]) * halves[1];
}

Tensor softplus(const Tensor& x) {
  check_float("softplus", x);
  return maximum(x, full(Shape(x.dtype()), 0.0)) + log1p(exp(-abs(x)));
}

Tensor softmax(const Tensor& x, const Axis& axis) {
  check_float("softmax", x);
  x.axis(axis);  // TraceError naming the axis and shape if absent
  Tensor e = exp(x - stable_max(x, axis));
  // One division per row, then a multiply per element (a vector divide costs
  // ~10x a multiply): within 1.5 ulp of e / sum.
  return e * (1.0 / reduce_sum(e, {axis}, ReduceOptions{.keep_dims = true}));
}

Tensor log_softmax(const Tensor& x, const Axis& axis) {
  check_float("log_softmax", x);
  x.axis(axis);
  Tensor shifted = x - stable_max(x, axis);
  return shifted - log(reduce_sum(exp(shifted), {axis}, ReduceOptions{.keep_dims = true}));
}

Tensor logsumexp(const Tensor& x, const Axis& axis) {
  check_float("logsumexp", x);
  x.axis(axis);
  Tensor m = stable_max(x, axis);
  Tensor r = m + log(reduce_sum(exp(x - m), {axis}, ReduceOptions{.keep_dims = true}));
  return squeeze(r, x.axis(axis));
}

}  // namespace radix
