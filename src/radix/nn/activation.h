// Activation choice for the nn layers that take one (MLP, conv block): a
// plain enum, so a layer's activation is data, not a template parameter.
#pragma once

#include "radix/trace/tensor.h"

namespace radix::nn {

enum class Activation {
  kNone,      // identity
  kRelu,
  kGelu,      // exact (erf) form
  kGeluTanh,  // GPT-2's tanh approximation
  kQuickGelu,
  kSilu,
  kTanh,
  kSigmoid,
};

// act(x); floats only except kNone / kRelu (as the underlying ops).
Tensor activate(const Tensor& x, Activation act);

}  // namespace radix::nn
