// Walking model structs and argument structures leaf by leaf.
//
// A model is a struct templated on its leaf type, listing its fields once:
//
//   template <class T> struct Linear {
//     T w, b;
//     template <class V> void visit(V&& v) { v("w", w); v("b", b); }
//   };
//
// Linear<Tensor> is traced, Linear<Buffer> holds the weights, and both are
// walked in the same order. Fields may be leaves (Tensor, Buffer, Shape),
// other visitable structs, std::array, std::vector, std::pair or std::tuple of
// those. visit() must only list fields, never modify them.
#pragma once

#include <array>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "radix/core/mesh.h"
#include "radix/core/shape.h"
#include "radix/runtime/buffer.h"
#include "radix/trace/tensor.h"

namespace radix {

namespace detail {
template <class T> struct is_std_array : std::false_type {};
template <class T, size_t N> struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T> struct is_std_vector : std::false_type {};
template <class T, class A> struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_tuple_like : std::false_type {};
template <class... T> struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B> struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class T> inline constexpr bool is_leaf_v =
    std::is_same_v<T, Tensor> || std::is_same_v<T, Buffer> || std::is_same_v<T, Shape>;
template <class T> inline constexpr bool dependent_false_v = false;
// Plain values call() accepts among its arguments and results (not long
// double: its padding bytes would make cache keys differ).
template <class T> inline constexpr bool is_plain_value_v =
    (std::is_arithmetic_v<T> || std::is_enum_v<T>) && !std::is_same_v<T, long double>;

struct VisitProbe {
  template <class F> void operator()(const char*, F&) const {}
};
template <class T>
concept Visitable = requires(T& t) { t.visit(VisitProbe{}); };

inline std::string join_path(const std::string& base, const std::string& part) {
  return base.empty() ? part : base + "." + part;
}

// Walks `obj` depth first. The walker provides:
//   void leaf(const std::string& path, L& leaf)   for each leaf type met
//   void vector(const std::string& path, std::vector<T>& v)  before a vector's
//        elements are walked (it may resize v).
// and, to accept plain values (ints, floats, enums, bools) in structures:
//   void value(const std::string& path, V& v)
template <class W, class T>
void walk(W& w, T& obj, const std::string& path) {
  if constexpr (is_leaf_v<T>) {
    w.leaf(path, obj);
  } else if constexpr (is_plain_value_v<T> && requires { w.value(path, obj); }) {
    w.value(path, obj);
  } else if constexpr (is_std_array<T>::value) {
    for (size_t i = 0; i < obj.size(); ++i) walk(w, obj[i], join_path(path, std::to_string(i)));
  } else if constexpr (is_std_vector<T>::value) {
    w.vector(path, obj);
    for (size_t i = 0; i < obj.size(); ++i) walk(w, obj[i], join_path(path, std::to_string(i)));
  } else if constexpr (is_tuple_like<T>::value) {
    size_t i = 0;
    std::apply([&](auto&... e) { (walk(w, e, join_path(path, std::to_string(i++))), ...); }, obj);
  } else if constexpr (Visitable<T>) {
    obj.visit([&](const char* name, auto& field) { walk(w, field, join_path(path, name)); });
  } else {
    static_assert(dependent_false_v<T>,
                  "radix: this type is not a leaf (Tensor/Buffer/Shape), a std container of them, or a struct "
                  "with a visit() listing its fields");
  }
}

// Records vector sizes in walk order (the "shape" of a structure).
struct SizeTape {
  std::vector<size_t> sizes;
  template <class L> void leaf(const std::string&, L&) {}
  template <class T> void vector(const std::string&, std::vector<T>& v) { sizes.push_back(v.size()); }
};
}  // namespace detail

// Calls f(path, leaf) for every leaf of type L in obj ("layers.0.w").
namespace detail {
template <class L, class F>
struct LeafCallback {
  F& f;
  void leaf(const std::string& p, L& l) { f(p, l); }
  template <class O> void leaf(const std::string&, O&) {}
  template <class V> void vector(const std::string&, V&) {}
};

template <class To, class Make>
struct CollectLeaves {
  Make& make;
  SizeTape tape;
  std::vector<To> leaves;
  template <class L> void leaf(const std::string& p, L& l) { leaves.push_back(make(p, l)); }
  template <class T> void vector(const std::string& p, std::vector<T>& v) { tape.vector(p, v); }
};

// Fills a structure's To leaves (and sizes its vectors) from a flat list.
template <class To>
struct FillLeaves {
  const std::vector<size_t>& sizes;
  std::vector<To>& leaves;
  size_t v = 0, l = 0;
  void leaf(const std::string&, To& x) { x = std::move(leaves[l++]); }
  template <class O> void leaf(const std::string&, O&) {}
  template <class T> void vector(const std::string&, std::vector<T>& vec) { vec.resize(sizes[v++]); }
};
}  // namespace detail

// Calls f(path, leaf) for every leaf of type L in obj ("layers.0.w").
template <class L, class T, class F>
void for_each_leaf(const T& obj, F&& f, const std::string& prefix = "") {
  detail::LeafCallback<L, std::remove_reference_t<F>> w{f};
  detail::walk(w, const_cast<T&>(obj), prefix);
}

// Rebinding a structure's leaf type: Rebind<Mlp<Tensor>, Buffer> = Mlp<Buffer>.
template <class T, class To> struct RebindLeaf { using type = T; };
template <class To> struct RebindLeaf<Tensor, To> { using type = To; };
template <class To> struct RebindLeaf<Buffer, To> { using type = To; };
template <class To> struct RebindLeaf<Shape, To> { using type = To; };
template <class T, size_t N, class To> struct RebindLeaf<std::array<T, N>, To> {
  using type = std::array<typename RebindLeaf<T, To>::type, N>;
};
template <class T, class To> struct RebindLeaf<std::vector<T>, To> {
  using type = std::vector<typename RebindLeaf<T, To>::type>;
};
template <class... T, class To> struct RebindLeaf<std::tuple<T...>, To> {
  using type = std::tuple<typename RebindLeaf<T, To>::type...>;
};
template <class A, class B, class To> struct RebindLeaf<std::pair<A, B>, To> {
  using type = std::pair<typename RebindLeaf<A, To>::type, typename RebindLeaf<B, To>::type>;
};
template <template <class> class M, class To>
  requires detail::Visitable<M<Tensor>>
struct RebindLeaf<M<Tensor>, To> { using type = M<To>; };
template <template <class> class M, class To>
  requires detail::Visitable<M<Buffer>>
struct RebindLeaf<M<Buffer>, To> { using type = M<To>; };
template <template <class> class M, class To>
  requires detail::Visitable<M<Shape>>
struct RebindLeaf<M<Shape>, To> { using type = M<To>; };

template <class T> using Bufferized = typename RebindLeaf<T, Buffer>::type;
template <class T> using Traced = typename RebindLeaf<T, Tensor>::type;

// Builds a structure of leaf type To with the same layout (vector sizes) as
// `src`, each leaf made by make(path, src_leaf).
template <class To, class From, class Make>
typename RebindLeaf<From, To>::type map_leaves(const From& src, Make&& make) {
  using Dst = typename RebindLeaf<From, To>::type;
  detail::CollectLeaves<To, std::remove_reference_t<Make>> collect{make, {}, {}};
  detail::walk(collect, const_cast<From&>(src), "");
  detail::FillLeaves<To> fill{collect.tape.sizes, collect.leaves};
  Dst dst{};
  detail::walk(fill, dst, "");
  return dst;
}

// Placeholder tensors shaped like the weights in `weights` (for tracing).
// With a mesh of several devices, the weights are this process's shards
// (upload_shard) and the placeholders take their whole shapes (each
// partitioned dim times its mesh axis' size), as a program on that mesh is
// traced.
template <class T>
Traced<T> tensors_like(const T& weights, const Mesh& mesh = Mesh()) {
  return map_leaves<Tensor>(weights, [&mesh](const std::string&, const auto& leaf) {
    if constexpr (std::is_same_v<std::decay_t<decltype(leaf)>, Shape>) return Tensor::placeholder(mesh.global_shape(leaf));
    else return Tensor::placeholder(mesh.global_shape(leaf.shape()));
  });
}

}  // namespace radix
