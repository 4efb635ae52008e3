// Indexing with run-time positions: dynamic slices and updates (a KV cache),
// taking rows or elements by integer ids (an embedding lookup), gathering
// along an axis. Positions are integer tensors computed in the graph.
//
// Out-of-range positions never read or write out of bounds: dynamic offsets
// are clamped so the whole window fits (StableHLO's rule), and ids are
// clamped into [0, n - 1] (JAX's default "clip" mode for gathers).
#pragma once

#include <vector>

#include "radix/trace/tensor.h"

namespace radix {

// One axis of a dynamic slice: a window of static `size` starting at the
// run-time rank-0 integer tensor `start` (clamped into [0, dim - size]).
struct DynamicSliceSpec {
  Axis axis;
  Tensor start;
  int64_t size = 1;
};
// x with each named axis cut to its window (others whole).
Tensor dynamic_slice(const Tensor& x, const std::vector<DynamicSliceSpec>& specs);

// One axis of a dynamic update: the update goes in at `start` (clamped into
// [0, dim - update's dim]); axes not named start at 0.
struct DynamicUpdateSpec {
  Axis axis;
  Tensor start;
};
// A copy of x with `update` (same dtype and rank, dims <= x's) written at the
// offsets; in place when x is a donated buffer.
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<DynamicUpdateSpec>& specs);

// Takes whole slices of x along `axis` by integer ids: the result has x's
// axes with `axis` replaced by ids' axes (ids' tags included). Each taken
// slice is copied as contiguous runs (memcpy), so embedding(table[v, d],
// ids[b, s]) -> [b, s, d] reads each row once with vector loads.
Tensor take(const Tensor& x, const Tensor& ids, const Axis& axis);
// The embedding lookup: take(table, ids, 0). table [vocab, d] -> [ids..., d].
Tensor embedding(const Tensor& table, const Tensor& ids);
// out[..., i, ...] = x[..., idx[..., i, ...], ...] along `axis`: idx has x's
// rank, the same dims off the axis, any size on it (NumPy's take_along_axis).
Tensor take_along_axis(const Tensor& x, const Tensor& idx, const Axis& axis);

namespace infer {
Shape dynamic_slice(const Shape& x, const std::vector<std::pair<Axis, int64_t>>& sizes,
                    const std::vector<Shape>& starts);
Shape take(const Shape& x, const Shape& ids, const Axis& axis);
Shape take_along_axis(const Shape& x, const Shape& idx, const Axis& axis);
}  // namespace infer

}  // namespace radix
