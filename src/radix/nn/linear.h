// Linear (dense) layers and the embedding lookup.
#pragma once

#include "radix/trace/tensor.h"

namespace radix::nn {

// x[..., d] . w[d, o] -> [..., o]: contracts x's last axis with w's first
// (by position, so tags need not match; result tags are x's leading tags then
// w's output tag). x and w share a float dtype; f16 / bf16 accumulate in f32
// and round once (dot_general's rule).
Tensor linear(const Tensor& x, const Tensor& w);
// The same plus bias b[o], added along the output axis (b's tag is ignored).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);

// Model-style layers (see api/visit.h): Linear<Tensor> is traced,
// Linear<Buffer> holds weights. forward: [..., d] -> [..., o].
template <class T> struct Linear {
  T w;  // [d, o]
  T b;  // [o]
  template <class V> void visit(V&& v) { v("w", w); v("b", b); }
  Tensor forward(const Tensor& x) const { return linear(x, w, b); }
};
template <class T> struct LinearNoBias {
  T w;  // [d, o]
  template <class V> void visit(V&& v) { v("w", w); }
  Tensor forward(const Tensor& x) const { return linear(x, w); }
};

// table[v, d], ids[...] (integer) -> [..., d]; ids are clamped into
// [0, v - 1] (radix::embedding's rule).
Tensor embed(const Tensor& table, const Tensor& ids);
template <class T> struct Embedding {
  T table;  // [v, d]
  template <class V> void visit(V&& v) { v("table", table); }
  Tensor forward(const Tensor& ids) const { return embed(table, ids); }
};

}  // namespace radix::nn
