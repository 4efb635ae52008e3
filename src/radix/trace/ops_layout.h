// Layout ops: slicing, joining, splitting, padding, reversing, repeating and
// regrouping axes. Every axis argument is an index or a tag. Results keep
// their operands' tags. Shape inference for each op is a pure function in
// radix::infer (no MLIR), unit-tested on its own.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "radix/trace/tensor.h"

namespace radix {

// One axis of a static slice, Python style: start and end may be negative
// (counted from the end) and are clamped to the axis; stride >= 1.
struct SliceSpec {
  Axis axis;
  int64_t start = 0;
  int64_t end = std::numeric_limits<int64_t>::max();
  int64_t stride = 1;
};
// x[start:end:stride] along each named axis (others whole). A view when the
// result is consumed in place; never reads out of bounds.
Tensor slice(const Tensor& x, const std::vector<SliceSpec>& specs);
Tensor slice(const Tensor& x, const Axis& axis, int64_t start, int64_t end, int64_t stride = 1);

// Joins tensors along an existing axis; all other dims (and dtypes) equal.
Tensor concatenate(const std::vector<Tensor>& xs, const Axis& axis);
// Joins tensors along a new axis inserted at `axis` (0..rank), optionally tagged.
Tensor stack(const std::vector<Tensor>& xs, int axis, Tag tag = Tag());
// Splits one axis into pieces of the given sizes (summing to the axis size).
std::vector<Tensor> split(const Tensor& x, const Axis& axis, const std::vector<int64_t>& sizes);
// Splits one axis into n equal pieces (the size must divide by n).
std::vector<Tensor> chunk(const Tensor& x, const Axis& axis, int64_t n);

struct PadSpec {
  Axis axis;
  int64_t low = 0, high = 0;  // elements added before / after (>= 0)
  int64_t interior = 0;       // elements added between neighbours (>= 0)
};
// Pads the named axes with `value` (which must fit x's dtype).
Tensor pad(const Tensor& x, const std::vector<PadSpec>& specs, double value = 0);

// Reverses the order of elements along each axis.
Tensor reverse(const Tensor& x, const std::vector<Axis>& axes);

// Each element repeated `times` in a row along axis: [a, b] x2 -> [a, a, b, b].
Tensor repeat(const Tensor& x, const Axis& axis, int64_t times);
// The whole axis repeated: [a, b] x2 -> [a, b, a, b].
Tensor tile(const Tensor& x, const Axis& axis, int64_t times);

// Merges all axes into one: [a, b, c] -> [a*b*c], optionally tagged.
Tensor flatten(const Tensor& x, Tag tag = Tag());
// Merges the consecutive axes first..last (inclusive) into one axis.
Tensor merge_axes(const Tensor& x, const Axis& first, const Axis& last, Tag tag = Tag());
// Splits one axis into several (their product = its size; one may be -1).
Tensor split_axis(const Tensor& x, const Axis& axis, const std::vector<int64_t>& dims,
                  const std::vector<Tag>& tags = {});
// Exchanges two axes (and their tags).
Tensor swap_axes(const Tensor& x, const Axis& a, const Axis& b);

namespace infer {
// Result shapes, or TraceError naming the op and every shape.
Shape slice(const Shape& x, const std::vector<SliceSpec>& specs);
Shape concatenate(const std::vector<Shape>& xs, const Axis& axis);
Shape pad(const Shape& x, const std::vector<PadSpec>& specs);
Shape repeat(const Shape& x, const Axis& axis, int64_t times, const char* op);
}  // namespace infer

}  // namespace radix
