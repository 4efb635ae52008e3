#include "radix/nn/mlp.h"

#include "radix/nn/check.h"
#include "radix/trace/ops.h"

namespace radix::nn {

// Each linear checks its own operands; the messages name nn::linear with the
// shapes involved, and these wrappers add the block's name in front.
namespace {
template <class F>
Tensor named(const char* layer, F&& f) {
  try {
    return f();
  } catch (const TraceError& e) {
    throw TraceError(std::string(layer) + ": " + e.what());
  }
}
}  // namespace

Tensor mlp(const Tensor& x, const Tensor& w_up, const Tensor& w_down, Activation act) {
  return named("nn::mlp", [&] { return linear(activate(linear(x, w_up), act), w_down); });
}

Tensor mlp(const Tensor& x, const Tensor& w_up, const Tensor& b_up, const Tensor& w_down, const Tensor& b_down,
           Activation act) {
  return named("nn::mlp", [&] { return linear(activate(linear(x, w_up, b_up), act), w_down, b_down); });
}

Tensor swiglu_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, const Tensor& w_down) {
  detail::require(w_gate.shape().same_dims(w_up.shape()), "nn::swiglu_mlp", {&x, &w_gate, &w_up, &w_down},
                  "w_gate and w_up must have the same dims");
  return named("nn::swiglu_mlp", [&] {
    Tensor g = linear(x, w_gate);
    // up takes gate's tags, so the two align however their weights are tagged.
    return linear(swiglu(g, linear(x, w_up).with_tags(g.shape().tags())), w_down);
  });
}

}  // namespace radix::nn
