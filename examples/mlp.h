// A small multi-layer perceptron, the built-in example of `radix example`
// and of the model tests. It shows the model conventions:
//  * one struct per layer, templated on its leaf (Tensor for tracing, Buffer
//    for weights), with one visit() listing its fields;
//  * tagged axes: activations are [b, d], weights [d, o], and
//    dot(x, w, "d") contracts the shared "d" axis.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "radix/radix.h"

namespace radix::examples {

// y = relu(x . w + b) (relu optional), renamed back to [b, d].
template <class T>
struct Linear {
  T w;  // [d=in, o=out]
  T b;  // [o=out]
  template <class V> void visit(V&& v) {
    v("w", w);
    v("b", b);
  }
  Tensor forward(const Tensor& x, bool activate) const {
    Tensor y = dot(x, w, "d") + b;  // [b, o] + [o] broadcasts by tag
    if (activate) y = relu(y);
    return y.with_tags({"b", "d"});
  }
};

template <class T>
struct Mlp {
  Linear<T> input;               // [in -> hidden]
  std::vector<Linear<T>> hidden; // [hidden -> hidden] each
  Linear<T> output;              // [hidden -> out]
  template <class V> void visit(V&& v) {
    v("input", input);
    v("hidden", hidden);
    v("output", output);
  }
  // x: f32[b=batch, d=in] -> f32[b=batch, d=out]
  Tensor forward(Tensor x) const {
    x = input.forward(x, true);
    for (const auto& layer : hidden) x = layer.forward(x, true);
    return output.forward(x, false);
  }
};

struct MlpConfig {
  int64_t in = 64, hidden = 128, out = 16;
  int n_hidden = 2;
  uint32_t seed = 1234;
};

// Host copy of the weights, row-major, for the reference implementation.
struct HostLinear {
  int64_t in = 0, out = 0;
  std::vector<float> w, b;
};
struct HostMlp {
  std::vector<HostLinear> layers;  // input, hidden..., output
};

inline HostMlp make_host_mlp(const MlpConfig& c) {
  std::mt19937 rng(c.seed);
  HostMlp m;
  auto layer = [&](int64_t in, int64_t out) {
    std::normal_distribution<float> d(0.f, 1.f / std::sqrt(static_cast<float>(in)));
    HostLinear l{in, out, std::vector<float>(static_cast<size_t>(in * out)), std::vector<float>(static_cast<size_t>(out))};
    for (auto& x : l.w) x = d(rng);
    for (auto& x : l.b) x = 0.1f * d(rng);
    return l;
  };
  m.layers.push_back(layer(c.in, c.hidden));
  for (int i = 0; i < c.n_hidden; ++i) m.layers.push_back(layer(c.hidden, c.hidden));
  m.layers.push_back(layer(c.hidden, c.out));
  return m;
}

// How the example splits its work over a mesh's one axis "x" (one process
// per device, under mpirun):
//  * kData: the batch split, every weight replicated;
//  * kTensor: Megatron's layout: even layers split their output features
//    (w by columns, b too), odd layers their input features (w by rows), so
//    an odd layer's product ends in an all-reduce over "x".
enum class MlpParallel { kNone, kData, kTensor };

// Layer `li`'s weight and bias shapes, partitioned as `mode` says.
inline std::pair<Shape, Shape> mlp_layer_shapes(const HostLinear& l, size_t li, MlpParallel mode) {
  Shape w(DType::kF32, {l.in, l.out}, {"d", "o"}), b(DType::kF32, {l.out}, {"o"});
  if (mode == MlpParallel::kTensor) {
    if (li % 2 == 0) {
      w = w.with_partition("o", "x");
      b = b.with_partition("o", "x");
    } else {
      w = w.with_partition("d", "x");
    }
  }
  return {w, b};
}

// Weights as device buffers, in the Mlp<Buffer> layout: whole on one
// device; on a mesh of several, this process's shards (upload_shard).
inline Result<Mlp<Buffer>> upload_mlp(const Platform& p, const HostMlp& h, const Mesh& mesh = Mesh(),
                                      MlpParallel mode = MlpParallel::kNone) {
  auto up = [&](size_t li) -> Result<Linear<Buffer>> {
    const HostLinear& l = h.layers[li];
    auto [ws, bs] = mlp_layer_shapes(l, li, mesh.single_device() ? MlpParallel::kNone : mode);
    Linear<Buffer> out;
    if (mesh.single_device()) {
      RADIX_ASSIGN_OR_RETURN(out.w, p.buffer(ws, l.w));
      RADIX_ASSIGN_OR_RETURN(out.b, p.buffer(bs, l.b));
    } else {
      RADIX_ASSIGN_OR_RETURN(out.w, upload_shard(p, mesh, ws, std::span<const float>(l.w)));
      RADIX_ASSIGN_OR_RETURN(out.b, upload_shard(p, mesh, bs, std::span<const float>(l.b)));
    }
    return out;
  };
  Mlp<Buffer> m;
  RADIX_ASSIGN_OR_RETURN(m.input, up(0));
  for (size_t i = 1; i + 1 < h.layers.size(); ++i) {
    RADIX_ASSIGN_OR_RETURN(Linear<Buffer> l, up(i));
    m.hidden.push_back(std::move(l));
  }
  RADIX_ASSIGN_OR_RETURN(m.output, up(h.layers.size() - 1));
  return m;
}

// Naive reference forward pass: x is [batch, in] row-major.
inline std::vector<float> mlp_reference(const HostMlp& m, std::vector<float> x, int64_t batch) {
  for (size_t li = 0; li < m.layers.size(); ++li) {
    const HostLinear& l = m.layers[li];
    std::vector<float> y(static_cast<size_t>(batch * l.out));
    for (int64_t r = 0; r < batch; ++r)
      for (int64_t o = 0; o < l.out; ++o) {
        double acc = l.b[static_cast<size_t>(o)];
        for (int64_t i = 0; i < l.in; ++i)
          acc += static_cast<double>(x[static_cast<size_t>(r * l.in + i)]) * l.w[static_cast<size_t>(i * l.out + o)];
        float v = static_cast<float>(acc);
        y[static_cast<size_t>(r * l.out + o)] = (li + 1 < m.layers.size() && v < 0) ? 0.f : v;
      }
    x = std::move(y);
  }
  return x;
}

}  // namespace radix::examples
