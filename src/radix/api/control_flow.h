// Control flow with traced bodies: while_loop, cond and for_loop, as JAX's
// lax.while_loop / lax.cond / lax.fori_loop. A body is a C++ callable over
// the loop *state*: a Tensor, a tuple / array / vector of Tensors, or a
// model-style struct (see visit.h). It is traced once into an scf.while /
// scf.if / scf.for region; tensors from outside the body may be used in it.
//
// The state's structure, shapes and dtypes must be the same after every step
// (a TraceError names the body and both shapes otherwise). A TraceError
// thrown inside a body names the body; the trace stays usable.
//
//   // Count up until x reaches a run-time bound: the trip count is data.
//   auto [i, x] = while_loop([&](auto s) { return lt(std::get<1>(s), bound); },
//                            [](auto s) { return std::make_tuple(std::get<0>(s) + 1, std::get<1>(s) * 2.0); },
//                            std::make_tuple(zero, x0));
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "radix/api/visit.h"
#include "radix/trace/tensor.h"

namespace radix {

namespace detail {
using FlatBody = std::function<std::vector<Tensor>(std::span<const Tensor>)>;
using FlatPred = std::function<Tensor(std::span<const Tensor>)>;
using FlatForBody = std::function<std::vector<Tensor>(const Tensor& i, std::span<const Tensor>)>;
// The non-template core: states as flat lists in visit() order.
std::vector<Tensor> while_loop_flat(const FlatPred& cond, const FlatBody& body, const std::vector<Tensor>& init);
std::vector<Tensor> cond_flat(const Tensor& pred, const FlatBody& then_fn, const FlatBody& else_fn,
                              const std::vector<Tensor>& operands);
std::vector<Tensor> for_loop_flat(int64_t begin, int64_t end, const FlatForBody& body, const std::vector<Tensor>& init);

template <class S>
std::vector<Tensor> flatten_state(const S& s) {
  std::vector<Tensor> flat;
  for_each_leaf<Tensor>(s, [&](const std::string&, const Tensor& t) { flat.push_back(t); });
  return flat;
}
// A copy of `like`'s structure holding `flat`'s tensors in order.
template <class S>
S unflatten_state(const S& like, std::span<const Tensor> flat) {
  if constexpr (std::is_same_v<S, Tensor>) {
    return flat[0];
  } else {
    size_t k = 0;
    return map_leaves<Tensor>(like, [&](const std::string&, const Tensor&) { return flat[k++]; });
  }
}
}  // namespace detail

// Runs body while cond(state) is true (cond returns a rank-0 bool tensor);
// returns the final state. cond: S -> Tensor, body: S -> S.
template <class S, class Cond, class Body>
S while_loop(Cond&& cond, Body&& body, const S& init) {
  std::vector<Tensor> out = detail::while_loop_flat(
      [&](std::span<const Tensor> s) -> Tensor { return cond(detail::unflatten_state(init, s)); },
      [&](std::span<const Tensor> s) { return detail::flatten_state(S(body(detail::unflatten_state(init, s)))); },
      detail::flatten_state(init));
  return detail::unflatten_state(init, out);
}

// then_fn(operands) if pred (a rank-0 bool tensor) else else_fn(operands);
// both branches return the same structure, shapes and dtypes (R).
template <class S, class Then, class Else>
auto cond(const Tensor& pred, Then&& then_fn, Else&& else_fn, const S& operands) {
  using R = std::decay_t<decltype(then_fn(operands))>;
  std::optional<R> like;
  std::vector<Tensor> out = detail::cond_flat(
      pred,
      [&](std::span<const Tensor> s) {
        R r = then_fn(detail::unflatten_state(operands, s));
        like = r;
        return detail::flatten_state(r);
      },
      [&](std::span<const Tensor> s) { return detail::flatten_state(R(else_fn(detail::unflatten_state(operands, s)))); },
      detail::flatten_state(operands));
  return detail::unflatten_state(*like, out);
}

// state = body(i, state) for i = begin .. end - 1 (a counted scf.for); i is a
// rank-0 i64 tensor. Returns the final state.
template <class S, class Body>
S for_loop(int64_t begin, int64_t end, Body&& body, const S& init) {
  std::vector<Tensor> out = detail::for_loop_flat(
      begin, end,
      [&](const Tensor& i, std::span<const Tensor> s) {
        return detail::flatten_state(S(body(i, detail::unflatten_state(init, s))));
      },
      detail::flatten_state(init));
  return detail::unflatten_state(init, out);
}

}  // namespace radix
