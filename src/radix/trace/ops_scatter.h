// Gather and scatter (see ops.h for the conventions every op follows);
// included from ops.h. StableHLO's semantics, with the index vector always on
// the *last* axis of `indices`: indices [batch..., K] holds K coordinates per
// batch element.
//
// Out-of-range indices:
//  * gather clamps each start into [0, dim - slice_size] (JAX's default
//    "clip" mode, as take / dynamic_slice do), so every read is in bounds;
//  * scatter drops an update window that does not fit whole (JAX's default
//    "FILL_OR_DROP" for scatters): x is left unchanged there.
//
// Scatter applies the updates in order (batch elements in row-major order,
// then each window in row-major order), so duplicate indices accumulate
// deterministically: with kAdd they sum, with kSet the last one wins. Each
// combination computes in x's dtype (an f16 scatter-add rounds per update;
// integers wrap; float min / max propagate NaN).
// It is one scf.for over the updates reading and writing x's elements with
// tensor.extract / tensor.insert, which bufferize in place (x is copied at
// most once, unless it is a donated buffer).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix {

// StableHLO's gather dimension numbers (index_vector_dim = indices' last axis).
struct GatherDims {
  std::vector<int64_t> offset_dims;           // result axes holding the slice's (kept) axes, ascending
  std::vector<int64_t> collapsed_slice_dims;  // x axes whose slice size is 1 and which are dropped, ascending
  std::vector<int64_t> start_index_map;       // x axis of each coordinate in the index vector
  std::vector<int64_t> slice_sizes;           // one per x axis
};

// out[b..., o...] = x[clamp(start(b)) + o]: the result has indices' batch
// axes in the positions not listed in offset_dims, and the slice's
// non-collapsed axes at offset_dims.
Tensor gather(const Tensor& x, const Tensor& indices, const GatherDims& dims);
// The common case: indices [batch..., K] holds coordinates along `axes`
// (K = axes.size()); each takes the whole slice of x's other axes. The
// result is [batch..., other axes of x in order] (indices' batch tags, x's
// tags). gather(x[n, d], ids[m, 1], {0}) takes rows; with every axis of x
// listed it takes elements (gather_nd).
Tensor gather(const Tensor& x, const Tensor& indices, const std::vector<Axis>& axes);

// How scatter combines x's element (old) with the update.
enum class ScatterMode { kSet, kAdd, kMin, kMax };
// A user combination over rank-0 tensors of x's dtype, returning one of that
// dtype. Traced (once) into the scatter loop; its rank-0 ops become scalar ops.
using ScatterFn = std::function<Tensor(const Tensor& old, const Tensor& update)>;

// StableHLO's scatter dimension numbers (index_vector_dim = indices' last axis).
struct ScatterDims {
  std::vector<int64_t> update_window_dims;            // updates axes holding the window, ascending
  std::vector<int64_t> inserted_window_dims;          // x axes with window size 1 not present in updates, ascending
  std::vector<int64_t> scatter_dims_to_operand_dims;  // x axis of each coordinate in the index vector
};

Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, const ScatterDims& dims,
               ScatterMode mode);
Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, const ScatterDims& dims,
               const ScatterFn& combine);
// The common case, the inverse of gather(x, indices, axes): updates are
// [batch..., other axes of x in order]; each batch element's slice goes to the
// coordinates indices[batch..., :] along `axes`.
Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, const std::vector<Axis>& axes,
               ScatterMode mode);
Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, const std::vector<Axis>& axes,
               const ScatterFn& combine);

namespace infer {
Shape gather(const Shape& x, const Shape& indices, const GatherDims& dims);
// The GatherDims that gather(x, indices, axes) uses.
GatherDims gather_dims(const Shape& x, const Shape& indices, const std::vector<Axis>& axes);
// Checks the operands; returns the result shape (x's).
Shape scatter(const Shape& x, const Shape& indices, const Shape& updates, const ScatterDims& dims);
ScatterDims scatter_dims(const Shape& x, const Shape& indices, const Shape& updates, const std::vector<Axis>& axes);
}  // namespace infer

}  // namespace radix
