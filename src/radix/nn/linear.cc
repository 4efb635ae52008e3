#include "radix/nn/linear.h"

#include "radix/nn/check.h"
#include "radix/trace/ops.h"

namespace radix::nn {
namespace {

void check_linear(const char* layer, const Tensor& x, const Tensor& w, const Tensor* b) {
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, layer, {&x, &w, b}, why); };
  req(x.rank() >= 1, "x must have rank >= 1 ([..., d])");
  req(w.rank() == 2, "w must be [d, o]");
  req(is_float(x.dtype()) && x.dtype() == w.dtype(), "x and w must share one float dtype");
  req(x.shape().dim(x.rank() - 1) == w.shape().dim(0), "x's last axis must match w's first (d)");
  if (b) {
    req(b->rank() == 1 && b->shape().dim(0) == w.shape().dim(1), "b must be [o] with o = w's second axis");
    req(b->dtype() == x.dtype(), "b must have x's dtype");
  }
}

Tensor contract(const Tensor& x, const Tensor& w) {
  // By position: tags on x's d axis and w's d axis may differ (or be absent).
  return dot_general(x, w, DotDims{{}, {}, {x.rank() - 1}, {0}});
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w) {
  check_linear("nn::linear", x, w, nullptr);
  return contract(x, w);
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  check_linear("nn::linear", x, w, &b);
  Tensor y = contract(x, w);
  // Explicit broadcast onto the last axis: independent of b's tags.
  return y + broadcast(b, y.shape(), {y.rank() - 1});
}

Tensor embed(const Tensor& table, const Tensor& ids) {
  detail::require(table.rank() == 2, "nn::embed", {&table, &ids}, "table must be [v, d]");
  detail::require(is_integer(ids.dtype()), "nn::embed", {&table, &ids}, "ids must be integers");
  return radix::embedding(table, ids);
}

}  // namespace radix::nn
