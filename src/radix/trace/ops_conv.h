// Convolution and pooling (see ops.h for the conventions every op follows).
//
// Layouts. A 2-D convolution's operands are, by ConvLayout:
//   kNHWC: input [N, H, W, C], kernel [KH, KW, C/groups, O] (HWIO), result [N, OH, OW, O]
//   kNCHW: input [N, C, H, W], kernel [O, C/groups, KH, KW] (OIHW), result [N, O, OH, OW]
// conv1d drops H / KH / OH (NWC with WIO kernels, NCW with OIW kernels).
// Result tags: the batch and spatial axes keep the input's tags; the channel
// axis takes the kernel's output-channel tag, or the input's channel tag when
// the kernel's is absent.
//
// Geometry (per spatial dim, XLA's definition): with padding (lo, hi),
// dilation d and kernel size k, the effective kernel is (k - 1) * d + 1 and
// the output size floor((in + lo + hi - eff) / stride) + 1; output element o
// reads padded input rows o * stride + j * d for j in [0, k). Padding reads
// as zero (the pooling ops' padding reads as their reduction's identity).
//
// Shape inference is separate from emission: conv1d_shape / conv2d_shape /
// reduce_window_shape are pure functions (no trace needed) that return the
// result shape or throw TraceError naming the op, every operand shape and
// the attributes. The tensor ops call them first, so they throw the same.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix {

using Axes = std::vector<Axis>;  // as in ops.h

enum class ConvLayout {
  kNHWC,  // channels last: input [N, spatial..., C], kernel [spatial..., C/groups, O]
  kNCHW,  // channels first: input [N, C, spatial...], kernel [O, C/groups, spatial...]
};

// Padding of the spatial (or windowed) dims.
//  * valid(): none.
//  * same(): output size ceil(in / stride); the total padding
//    max((out - 1) * stride + eff - in, 0) is split with the extra element
//    at the end (low = total / 2), as in TensorFlow and XLA.
//  * explicit_pads({{lo, hi}, ...}): one (low, high) pair per dim, each >= 0.
struct Padding {
  enum class Mode { kValid, kSame, kExplicit };
  Mode mode = Mode::kValid;
  std::vector<std::pair<int64_t, int64_t>> pads;  // kExplicit only

  static Padding valid() { return {}; }
  static Padding same() { return {Mode::kSame, {}}; }
  static Padding explicit_pads(std::vector<std::pair<int64_t, int64_t>> p) { return {Mode::kExplicit, std::move(p)}; }
};

struct ConvOptions {
  // Per spatial dim; empty means all 1, a single value applies to every dim.
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;  // kernel (rhs) dilation
  Padding padding;
  // Feature groups: C and O must both be divisible by it; input channels
  // [g * C/groups, (g+1) * C/groups) feed output channels [g * O/groups, ...).
  // groups == C is a depthwise convolution.
  int64_t groups = 1;
  ConvLayout layout = ConvLayout::kNHWC;
};

// Floats only. f32 / f64 compute in their dtype; f16 / bf16 multiply and
// accumulate in f32 and round once, as dot_general does. groups == 1 emits
// one linalg.conv_2d_nhwc_hwcf (NCHW operands are transposed to NHWC / HWIO
// and the result back; conv1d is a conv2d over a unit H axis), which the CPU
// schedule tiles, decomposes to 1-D convolutions and vectorizes. Grouped
// convolutions (depthwise included) emit one linalg.generic: plain loops.
Tensor conv1d(const Tensor& input, const Tensor& kernel, const ConvOptions& opts = {});
Tensor conv2d(const Tensor& input, const Tensor& kernel, const ConvOptions& opts = {});
Shape conv1d_shape(const Shape& input, const Shape& kernel, const ConvOptions& opts = {});
Shape conv2d_shape(const Shape& input, const Shape& kernel, const ConvOptions& opts = {});

// ---------------------------------------------------------------- pooling
enum class WindowReduction { kMax, kMin, kSum, kAvg };

struct WindowOptions {
  Axes axes;                     // the windowed axes (indices or tags), any order, each once
  std::vector<int64_t> window;   // window size, one per entry of axes
  // One per entry of axes; empty means all 1, a single value applies to all.
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;  // window dilation
  Padding padding;                 // one pair per entry of axes when explicit
  // kAvg only: false (default) divides each sum by the number of non-padding
  // elements in its window (TensorFlow's and Flax's "same" average; a window
  // lying wholly in the padding gives 0); true divides by the full window
  // size, padding counting as zeros (PyTorch's count_include_pad).
  bool count_padding = false;
};

// XLA's reduce_window over the given axes; the other axes pass through.
// kMax / kMin: any dtype but bool, padding never wins (it reads as -inf / +inf,
// or the integer type's min / max). kSum: any dtype but bool. kAvg: floats
// only. f16 / bf16 sums and averages accumulate in f32 and round once. Result
// tags are x's.
Tensor reduce_window(const Tensor& x, WindowReduction kind, const WindowOptions& opts);
Shape reduce_window_shape(const Shape& x, WindowReduction kind, const WindowOptions& opts);

struct Pool2dOptions {
  std::vector<int64_t> strides;  // {sh, sw}; empty means the window size (non-overlapping)
  Padding padding;
  ConvLayout layout = ConvLayout::kNHWC;  // which axes are H and W
  bool count_padding = false;  // avg_pool2d only, as WindowOptions::count_padding
};
// reduce_window over H and W of a rank-4 NHWC / NCHW tensor.
Tensor max_pool2d(const Tensor& x, std::array<int64_t, 2> window, const Pool2dOptions& opts = {});
Tensor avg_pool2d(const Tensor& x, std::array<int64_t, 2> window, const Pool2dOptions& opts = {});

}  // namespace radix
