// A convolution block: act(conv2d(x, kernel) + bias).
#pragma once

#include "radix/nn/activation.h"
#include "radix/trace/ops_conv.h"
#include "radix/trace/tensor.h"

namespace radix::nn {

// x and kernel as conv2d takes them (opts.layout: NHWC with HWIO kernels, or
// NCHW with OIHW kernels); bias[O] is added along the result's channel axis
// (by position, its tag ignored). Result: conv2d's shape and dtype.
Tensor conv2d_block(const Tensor& x, const Tensor& kernel, const Tensor& bias, Activation act = Activation::kRelu,
                    const ConvOptions& opts = {});

template <class T> struct Conv2dBlock {
  T kernel;  // [KH, KW, C, O] (NHWC layout)
  T bias;    // [O]
  template <class V> void visit(V&& v) { v("kernel", kernel); v("bias", bias); }
  // NHWC, stride 1, "same" padding, ReLU.
  Tensor forward(const Tensor& x) const {
    ConvOptions o;
    o.padding = Padding::same();
    return conv2d_block(x, kernel, bias, Activation::kRelu, o);
  }
};

}  // namespace radix::nn
