#include "radix/nn/activation.h"

#include "radix/trace/ops.h"

namespace radix::nn {

Tensor activate(const Tensor& x, Activation act) {
  switch (act) {
    case Activation::kNone: return x;
    case Activation::kRelu: return relu(x);
    case Activation::kGelu: return gelu(x, GeluForm::kErf);
    case Activation::kGeluTanh: return gelu(x, GeluForm::kTanh);
    case Activation::kQuickGelu: return quick_gelu(x);
    case Activation::kSilu: return silu(x);
    case Activation::kTanh: return tanh(x);
    case Activation::kSigmoid: return sigmoid(x);
  }
  return x;
}

}  // namespace radix::nn
