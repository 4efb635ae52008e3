// Feed-forward blocks. Weights are [d, f] / [f, d] as nn::linear takes them.
#pragma once

#include "radix/nn/activation.h"
#include "radix/nn/linear.h"
#include "radix/trace/tensor.h"

namespace radix::nn {

// down(act(up(x))): x[..., d], w_up[d, f], w_down[f, d'] -> [..., d'].
Tensor mlp(const Tensor& x, const Tensor& w_up, const Tensor& w_down, Activation act = Activation::kGelu);
// With biases b_up[f], b_down[d'].
Tensor mlp(const Tensor& x, const Tensor& w_up, const Tensor& b_up, const Tensor& w_down, const Tensor& b_down,
           Activation act = Activation::kGelu);
// Llama's gated MLP: down(silu(gate(x)) * up(x)), no biases.
// x[..., d], w_gate[d, f], w_up[d, f], w_down[f, d'] -> [..., d'].
Tensor swiglu_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, const Tensor& w_down);

// Model-style blocks. Mlp's activation is GELU (erf) in forward(); another
// one goes through forward_with (the activation is not a traced leaf).
template <class T> struct Mlp {
  Linear<T> up, down;
  template <class V> void visit(V&& v) { v("up", up); v("down", down); }
  Tensor forward(const Tensor& x) const { return forward_with(x, Activation::kGelu); }
  Tensor forward_with(const Tensor& x, Activation act) const { return mlp(x, up.w, up.b, down.w, down.b, act); }
};
template <class T> struct SwiGluMlp {
  LinearNoBias<T> gate, up, down;
  template <class V> void visit(V&& v) { v("gate", gate); v("up", up); v("down", down); }
  Tensor forward(const Tensor& x) const { return swiglu_mlp(x, gate.w, up.w, down.w); }
};

}  // namespace radix::nn
