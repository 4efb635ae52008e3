#include "radix/nn/norm.h"

#include "radix/nn/check.h"
#include "radix/trace/ops.h"

namespace radix::nn {
namespace {

// Resolves `axis` and checks x and each (present) weight; returns the axis index.
int check_norm(const char* layer, const Tensor& x, const Tensor* w, const Tensor* b, const Axis& axis) {
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, layer, {&x, w, b}, why); };
  req(is_float(x.dtype()), "x must be a float tensor");
  std::optional<int> ax = x.shape().find_axis(axis);
  req(ax.has_value(), "no axis " + axis.to_string());
  const int64_t d = x.shape().dim(*ax);
  for (const Tensor* p : {w, b})
    if (p) {
      req(is_float(p->dtype()), "weights must be float tensors");
      req(p->rank() == 1 && p->shape().dim(0) == d,
          "weights must be rank 1 of the normalized axis' size " + std::to_string(d));
    }
  return *ax;
}

// weight[d] in the compute dtype, laid along axis `ax` of `like`.
Tensor along(const Tensor& w, const Tensor& like, int ax) {
  Tensor wc = w.dtype() == like.dtype() ? w : convert(w, like.dtype());
  return broadcast(wc, like.shape(), {ax});
}

}  // namespace

Tensor rms_norm(const Tensor& x, const Tensor& weight, const Axis& axis, double eps) {
  const int ax = check_norm("nn::rms_norm", x, &weight, nullptr, axis);
  const DType cd = detail::compute_dtype(x.dtype());
  Tensor xf = cd == x.dtype() ? x : convert(x, cd);
  Tensor ms = reduce_mean(xf * xf, {ax}, {.keep_dims = true});
  Tensor y = xf * broadcast_to(rsqrt(ms + eps), xf.shape()) * along(weight, xf, ax);
  return cd == x.dtype() ? y : convert(y, x.dtype());
}

Tensor rms_norm(const Tensor& x, const Axis& axis, double eps) {
  const int ax = check_norm("nn::rms_norm", x, nullptr, nullptr, axis);
  const DType cd = detail::compute_dtype(x.dtype());
  Tensor xf = cd == x.dtype() ? x : convert(x, cd);
  Tensor ms = reduce_mean(xf * xf, {ax}, {.keep_dims = true});
  Tensor y = xf * broadcast_to(rsqrt(ms + eps), xf.shape());
  return cd == x.dtype() ? y : convert(y, x.dtype());
}

Tensor layer_norm(const Tensor& x, const std::optional<Tensor>& scale, const std::optional<Tensor>& bias,
                  const Axis& axis, double eps) {
  const int ax = check_norm("nn::layer_norm", x, scale ? &*scale : nullptr, bias ? &*bias : nullptr, axis);
  const DType cd = detail::compute_dtype(x.dtype());
  Tensor xf = cd == x.dtype() ? x : convert(x, cd);
  Tensor mean = broadcast_to(reduce_mean(xf, {ax}, {.keep_dims = true}), xf.shape());
  Tensor c = xf - mean;
  Tensor var = reduce_mean(c * c, {ax}, {.keep_dims = true});
  Tensor y = c * broadcast_to(rsqrt(var + eps), xf.shape());
  if (scale) y = y * along(*scale, xf, ax);
  if (bias) y = y + along(*bias, xf, ax);
  return cd == x.dtype() ? y : convert(y, x.dtype());
}

}  // namespace radix::nn
