// The operator set. Every op is a free function over Tensors that emits
// upstream MLIR (linalg / tensor / arith / math) into the active
// CompilationContext and returns a new Tensor; inputs are never modified.
//
// Misuse (mismatched shapes or dtypes, unknown axes) throws TraceError at once
// with every operand shape in the message.
//
// Broadcasting (binary ops, select, broadcast_to):
//  * a rank-0 operand broadcasts to any shape;
//  * if every axis of both operands is tagged, axes are aligned by tag. When
//    one operand's tags include all of the other's, the result has that
//    (larger) operand's axis order: [d] + [b, d] -> [b, d], and
//    select(mask[s,t], scores[b,h,s,t], ...) -> [b,h,s,t]. Otherwise the
//    result has the lhs axes followed by the rhs axes whose tags lhs lacks
//    ([b, s] + [s, d] -> [b, s, d]);
//  * otherwise axes are aligned from the right (NumPy rules): sizes must be
//    equal or 1. Tags carry over from whichever operand has them; two
//    different tags on one aligned axis are an error.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix {

using Axes = std::vector<Axis>;

// ---------------------------------------------------------------- constants
// A rank-0 constant. Integers and bools are exact (a non-integral or
// out-of-range value is a TraceError); floats round to dtype (a finite value
// that would overflow to infinity is a TraceError).
Tensor scalar(double value, DType dtype);
// A constant of `shape` filled with `value` (same rule as scalar).
Tensor full(const Shape& shape, double value);
// A constant from host data (each value as in scalar()); data.size() must
// equal shape.count(). Meant for small tables; weights belong in Buffers.
Tensor constant(const Shape& shape, std::span<const double> data);
// 0, 1, ..., n-1 along a new rank-1 axis (optionally tagged).
Tensor iota(int64_t n, DType dtype, Tag tag = Tag());
// start, start + step, ... below stop (above it for a negative step), as
// NumPy's arange: ceil((stop - start) / step) elements, computed as
// start + i * step in double and rounded once to dtype.
Tensor arange(double start, double stop, double step = 1, DType dtype = DType::kF32, Tag tag = Tag());
// num evenly spaced values from start to stop (inclusive when `endpoint`):
// start + i * (stop - start) / (num - endpoint), computed in double.
Tensor linspace(double start, double stop, int64_t num, DType dtype = DType::kF32, Tag tag = Tag(),
                bool endpoint = true);
Tensor zeros(const Shape& shape);
Tensor ones(const Shape& shape);
// [rows, cols] with ones where col - row == k (k = 0: the main diagonal).
Tensor eye(int64_t rows, int64_t cols, DType dtype = DType::kF32, int64_t k = 0, Tag row_tag = Tag(),
           Tag col_tag = Tag());
// Bool [rows, cols] masks: lower triangle col <= row + k; upper col >= row + k.
// tril_mask(n, n) is the causal attention mask.
Tensor tril_mask(int64_t rows, int64_t cols, int64_t k = 0, Tag row_tag = Tag(), Tag col_tag = Tag());
Tensor triu_mask(int64_t rows, int64_t cols, int64_t k = 0, Tag row_tag = Tag(), Tag col_tag = Tag());

// ---------------------------------------------------------------- elementwise
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
// Integers: truncating like C++, but never trapping: x / 0 = -1 (all bits
// set) and INT_MIN / -1 = INT_MIN, as in XLA.
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);    // floats only, as are log .. sigmoid
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);   // max(x, 0), any numeric dtype

// Comparisons return bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// cond ? a : b elementwise; cond must be bool; the three broadcast together.
Tensor select(const Tensor& cond, const Tensor& a, const Tensor& b);

// Converts element type. Floats round to nearest; float -> int truncates
// toward zero and saturates (NaN -> 0, out of range -> the type's min / max);
// int -> narrower int wraps; anything -> bool is `!= 0`.
Tensor convert(const Tensor& x, DType dtype);

// ---------------------------------------------------------------- shape ops
// Broadcasts x to `shape` with the broadcasting rules above (x's dims must be
// 1 or equal to the aligned target dim). Result has `shape` (its tags too).
Tensor broadcast_to(const Tensor& x, const Shape& shape);
// Explicit form: x's axis i becomes result axis axes[i] (indices or tags of
// `shape`); axes.size() == x.rank().
Tensor broadcast(const Tensor& x, const Shape& shape, const Axes& axes);
// New dims with the same element count; one dim may be -1 (inferred).
// Tags are dropped unless `tags` is given.
Tensor reshape(const Tensor& x, std::initializer_list<int64_t> dims);
Tensor reshape(const Tensor& x, std::span<const int64_t> dims, std::span<const Tag> tags = {});
// Result axis i is x's axis perm[i] (index or tag); tags move with their axes.
Tensor transpose(const Tensor& x, const Axes& perm);
// Inserts a size-1 axis at `axis` (0..rank), optionally tagged.
Tensor expand_dims(const Tensor& x, int axis, Tag tag = Tag());
// Removes a size-1 axis.
Tensor squeeze(const Tensor& x, const Axis& axis);

// ---------------------------------------------------------------- reductions
struct ReduceOptions {
  bool keep_dims = false;  // keep reduced axes as size 1 (tags kept)
};
// Reduce over `axes` (indices or tags); empty axes = all axes. f16 / bf16
// sums and means accumulate in f32 and round once.
Tensor reduce_sum(const Tensor& x, const Axes& axes = {}, ReduceOptions opts = {});
Tensor reduce_max(const Tensor& x, const Axes& axes = {}, ReduceOptions opts = {});
Tensor reduce_min(const Tensor& x, const Axes& axes = {}, ReduceOptions opts = {});
Tensor reduce_mean(const Tensor& x, const Axes& axes = {}, ReduceOptions opts = {});  // floats only
// Product (f16 / bf16 in f32, rounded once); empty axes give 1.
Tensor reduce_prod(const Tensor& x, const Axes& axes = {}, ReduceOptions opts = {});
// Logical and / or of a bool tensor (empty axes: true / false).
Tensor reduce_all(const Tensor& x, const Axes& axes = {}, ReduceOptions opts = {});
Tensor reduce_any(const Tensor& x, const Axes& axes = {}, ReduceOptions opts = {});
// Index of the largest / smallest element along `axis` (removed), in the
// integer `index_dtype`. The first index wins ties; a NaN counts as the
// largest and the smallest (the first NaN is returned), as in NumPy.
Tensor argmax(const Tensor& x, const Axis& axis, DType index_dtype = DType::kI32);
Tensor argmin(const Tensor& x, const Axis& axis, DType index_dtype = DType::kI32);

// ---------------------------------------------------------------- contractions
struct DotDims {
  Axes lhs_batch, rhs_batch;        // paired batching axes
  Axes lhs_contract, rhs_contract;  // paired contracting axes
};
// General contraction. Result axes: batch axes (lhs order), then lhs free
// axes, then rhs free axes; tags carry over. Operands share one dtype; f16 /
// bf16 products accumulate in f32 and round once to the operand dtype.
Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const DotDims& dims);
// Tagged contraction: contracts the axes carrying the given tags in both
// operands; every other tag present in both becomes a batching axis.
Tensor dot(const Tensor& lhs, const Tensor& rhs, std::initializer_list<Tag> contract);
Tensor dot(const Tensor& lhs, const Tensor& rhs, Tag contract);
// [..., m, k] x [..., k, n] -> [..., m, n] with equal leading batch dims;
// rank-1 operands act as a row / column vector and that axis is dropped.
Tensor matmul(const Tensor& lhs, const Tensor& rhs);

// ---------------------------------------------------------------- operators
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
// Scalar operands take the tensor's dtype, and must fit it: an integer or bool
// tensor takes only integral values in its range (`x * 0.5` on i32 is a
// TraceError, never a silent 0), a float tensor any value that does not
// overflow its dtype to infinity (0.1 rounds to the nearest f32).
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

}  // namespace radix

// Op families in their own headers.
#include "radix/trace/ops_activation.h"
#include "radix/trace/ops_conv.h"
#include "radix/trace/ops_custom_call.h"
#include "radix/trace/ops_index.h"
#include "radix/trace/ops_layout.h"
#include "radix/trace/ops_math.h"
#include "radix/trace/ops_quant.h"
#include "radix/trace/ops_random.h"
#include "radix/trace/ops_scan.h"
#include "radix/trace/ops_scatter.h"
#include "radix/trace/ops_shard.h"
#include "radix/trace/ops_sort.h"

