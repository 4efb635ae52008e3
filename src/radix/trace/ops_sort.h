// Sorting ops (see ops.h for the conventions every op follows): sort, argsort,
// top_k, along one axis given by index or tag.
//
// Ordering. Sorts are stable: equal elements keep their input order. The
// default order is ascending (or descending with SortOptions::descending) by
// value: integers by their signed / unsigned value; floats by value with
// -0.0 == 0.0 (so they keep their input order) and NaNs last in *both*
// directions (among themselves in input order). Bool keys need a comparator.
//
// Cost. Each row along the axis is sorted by insertion sort of runs of 16
// and a bottom-up merge of the runs: O(n log n) time, stable, one scratch
// buffer of the operands' size, in-place loads and stores (no allocation in
// the loops; a comparator is inlined as scalar code). top_k with k <= 1024
// keeps a binary heap of the k best per row: O(n log k), and on a long row
// most elements cost one comparison with the heap's root; larger k sorts the
// whole row.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix {

struct SortOptions {
  bool descending = false;
  DType index_dtype = DType::kI32;  // argsort's result dtype (any integer dtype that holds size - 1)
};

// "a goes before b": receives two rank-0 tensors of the key dtype and returns
// a rank-0 bool tensor. It must be a strict weak order (like std::sort's
// comparator); ties keep their input order. Traced (on fresh rank-0 tensors)
// into each sort loop that compares, so it may be called more than once.
using SortComparator = std::function<Tensor(const Tensor& a, const Tensor& b)>;

// x sorted along `axis`.
Tensor sort(const Tensor& x, const Axis& axis = -1, SortOptions options = {});
Tensor sort(const Tensor& x, const Axis& axis, const SortComparator& before);
// Multi-operand: sorts by operands[0] (the keys) and applies the same
// permutation to every other operand (payloads of any dtype, bool included).
// All operands have the same dims; results keep each operand's shape.
std::vector<Tensor> sort(const std::vector<Tensor>& operands, const Axis& axis, SortOptions options = {});
std::vector<Tensor> sort(const std::vector<Tensor>& operands, const Axis& axis, const SortComparator& before);

// The indices along `axis` that sort x (stable): element i of a row of the
// result is the input position of the row's i-th element after sort().
Tensor argsort(const Tensor& x, const Axis& axis = -1, SortOptions options = {});
Tensor argsort(const Tensor& x, const Axis& axis, const SortComparator& before, DType index_dtype = DType::kI32);

// The k largest values along `axis`, in descending order, and their indices;
// on ties the smaller index comes first; NaNs rank below every number.
// Both results have x's shape with that axis of size k. A traced function
// may return the TopK itself: compile_fn's call then gives TopKResult<Buffer>.
template <class T>
struct TopKResult {
  T values;
  T indices;
  template <class V> void visit(V&& v) { v("values", values); v("indices", indices); }
};
using TopK = TopKResult<Tensor>;
TopK top_k(const Tensor& x, int64_t k, const Axis& axis = -1, DType index_dtype = DType::kI32);

// ---------------------------------------------------------------- shape inference
// Pure functions (no tracing, no MLIR): the result shapes of the ops above
// from operand shapes and attributes. They throw TraceError naming the op and
// every operand shape on misuse; the ops call them first.
namespace sort_shapes {
// has_comparator: bool keys are allowed only with a comparator.
std::vector<Shape> sort(std::span<const Shape> operands, const Axis& axis, bool has_comparator = false);
Shape argsort(const Shape& x, const Axis& axis, DType index_dtype, bool has_comparator = false);
std::pair<Shape, Shape> top_k(const Shape& x, int64_t k, const Axis& axis, DType index_dtype);
// A comparator's result must be a rank-0 bool; `op` names the calling op.
void check_comparator(const char* op, const Shape& key, const Shape& result);
}  // namespace sort_shapes

}  // namespace radix
