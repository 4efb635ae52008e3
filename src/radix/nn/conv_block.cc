#include "radix/nn/conv_block.h"

#include "radix/nn/check.h"
#include "radix/trace/ops.h"

namespace radix::nn {

Tensor conv2d_block(const Tensor& x, const Tensor& kernel, const Tensor& bias, Activation act, const ConvOptions& opts) {
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, "nn::conv2d_block", {&x, &kernel, &bias}, why); };
  req(x.rank() == 4 && kernel.rank() == 4, "x and kernel must be rank 4");
  const int c_axis = opts.layout == ConvLayout::kNHWC ? 3 : 1;
  const int o_axis = opts.layout == ConvLayout::kNHWC ? 3 : 0;
  req(bias.rank() == 1 && bias.shape().dim(0) == kernel.shape().dim(o_axis),
      "bias must be [O] with O = the kernel's output channels");
  req(bias.dtype() == x.dtype(), "bias must have x's dtype");
  Tensor y = conv2d(x, kernel, opts);
  return activate(y + broadcast(bias, y.shape(), {c_axis}), act);
}

}  // namespace radix::nn
