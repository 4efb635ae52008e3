// Cumulative ops and a generic reduce with a traced body (see ops.h for the
// conventions every op follows); included from ops.h.
//
// cumsum / cumprod / cummax / cummin run along one axis in linear time: an
// scf.for over the axis carries the running value as a slice of the other
// axes (or, along the innermost axis, a scalar per contiguous line),
// combining it with one slice of x per step. Integers wrap; float max / min propagate NaN; f16 / bf16
// accumulate in f32 and round each output once. Bool tensors are refused.
#pragma once

#include <functional>
#include <vector>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix {

struct ScanOptions {
  // Exclusive: out[i] combines x[0 .. i-1] (out[0] is the identity: 0, 1,
  // the dtype's lowest / highest value, -inf / +inf for floats).
  bool exclusive = false;
  // Scan from the end of the axis towards its start.
  bool reverse = false;
};

Tensor cumsum(const Tensor& x, const Axis& axis, ScanOptions options = {});
Tensor cumprod(const Tensor& x, const Axis& axis, ScanOptions options = {});
Tensor cummax(const Tensor& x, const Axis& axis, ScanOptions options = {});
Tensor cummin(const Tensor& x, const Axis& axis, ScanOptions options = {});

// body(acc, element) -> new acc, over rank-0 tensors: acc has init's dtype,
// element has x's, and the result must be a rank-0 tensor of init's dtype.
using ReduceFn = std::function<Tensor(const Tensor& acc, const Tensor& x)>;

// Folds `body` over the `axes` of x (empty = all), starting from `init` (a
// rank-0 tensor; the result has its dtype) once per output element. The
// elements are visited in row-major order, so the body need not be
// associative or commutative. Traced once into a linalg.generic reduction
// whose region holds the body as scalar ops (plain loops: the vectorizing
// schedule only handles the combiners it knows, so use reduce_sum & co. for
// those).
Tensor reduce(const Tensor& x, const std::vector<Axis>& axes, const Tensor& init, const ReduceFn& body);
// init as a number of x's dtype (it must fit, as for scalar()).
Tensor reduce(const Tensor& x, const std::vector<Axis>& axes, double init, const ReduceFn& body);

namespace infer {
// Checks the axis and dtype; the result has x's shape.
Shape cumulative(const char* op, const Shape& x, const Axis& axis);
// Result of reduce: x's shape without `axes`, with init's dtype.
Shape reduce(const Shape& x, const std::vector<Axis>& axes, const Shape& init);
}  // namespace infer

}  // namespace radix
