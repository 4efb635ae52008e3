// call(): traced function calls (the seeds' FnCache). The first call of a
// function with given argument shapes and plain values traces it once into
// a private func.func; every call emits a func.call of it. A model of twelve
// identical layers becomes one layer function called twelve times instead of
// twelve inlined copies: smaller IR, faster tracing, readable dumps. The CPU
// backend keeps the calls, so the layer is also scheduled and compiled once.
//
//   template <class T> struct Layer {
//     T w, b;                                        // f32[o,d], f32[o]
//     template <class V> void visit(V&& v) { v("w", w); v("b", b); }
//     Tensor forward(Tensor x) const { return relu(dot(w, x, "d") + b); }
//   };
//   for (const Layer<Tensor>& l : layers) x = call(&Layer<Tensor>::forward, l, x);
//   auto [y, n] = call(&step, x, 3);   // a free function, a plain int argument
//
// Callees: a pointer to a member function (the object comes first among the
// arguments; the tensors its visit() lists become the first parameters), a
// pointer to a free or static member function, or a captureless lambda.
// call("name", fn, args...) names the function (default: the object's class
// name, or "fn"); the symbol is "<name>_<hash of the arguments>".
// Arguments: Tensors, model structs (api/visit.h), std::array / vector /
// tuple / pair of those, and plain values (ints, floats, enums, bools),
// converted to the parameter types. Results: the same, plain values
// included (e.g. std::tuple<Tensor, int>); result shapes keep their tags.
//
// Cache: per traced module (its CompilationContext). The key is the callee
// plus every argument tensor's dtype, dims, tags and sharding, and every
// plain value. On a hit the callee does not run: the func.call is emitted
// and the plain values of its first result are returned again. So a callee
// must depend on its arguments only: a field its object's visit() does not
// list, or a global, is read once (a caller's tensor reached that way is a
// TraceError, "captured from an enclosing function": pass it as an argument).
//
// Donation: a callee result that is reuse_buffer(p) of one of its parameters
// donates into what the caller passed for p, when that is an argument of the
// calling function or itself donates into one (so @main gets the
// tf.aliasing_output attribute, through any depth of calls). Memory kinds
// (Tensor::to_memory) carry over to the call's results the same way.
//
// Works in @main, in control-flow bodies and in other callees; outside
// tracing it is a TraceError naming call(). Returned tensors belong to the
// caller's trace, like any op's results.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "radix/api/visit.h"
#include "radix/trace/tensor.h"

namespace radix {

namespace detail {

// One call, flattened: built by call(), consumed by call_flat.
struct CallSite {
  std::string name;              // readable part of the symbol
  std::string identity;          // the callee, as bytes (meaningful in this process only)
  std::string key;               // argument shapes and plain values, as deterministic bytes
  std::vector<Tensor> operands;  // tensor arguments: the object's, then the others'
};
// Runs the callee on `params` (one per operand); returns its result tensors
// and keeps its typed result in `typed`.
using CalleeTrace =
    std::function<std::vector<Tensor>(std::span<const Tensor> params, std::shared_ptr<const void>& typed)>;
// The non-template core (trace/call.cc): traces the callee on a cache miss,
// emits the func.call, returns its results (donations and memory kinds
// mapped to the caller) and, in `typed`, the callee's typed first result.
std::vector<Tensor> call_flat(const CallSite& site, const CalleeTrace& trace, std::shared_ptr<const void>& typed);
void append_shape_key(std::string& key, const Shape& shape);
// "Layer" out of a __PRETTY_FUNCTION__ naming T = ns::Layer<radix::Tensor>.
std::string short_type_name(std::string_view pretty_function);
template <class T> std::string_view pretty_type() { return __PRETTY_FUNCTION__; }

template <class R, class... A> struct plain_callee {
  using object = void;
  using ret = std::decay_t<R>;
  using params = std::tuple<std::decay_t<A>...>;
};
template <class F> struct lambda_traits {};
template <class L, class R, class... A> struct lambda_traits<R (L::*)(A...) const> : plain_callee<R, A...> {};
template <class L, class R, class... A> struct lambda_traits<R (L::*)(A...) const noexcept> : plain_callee<R, A...> {};
template <class F> struct callee_traits {};
template <class R, class... A> struct callee_traits<R (*)(A...)> : plain_callee<R, A...> {};
template <class R, class... A> struct callee_traits<R (*)(A...) noexcept> : plain_callee<R, A...> {};
template <class C, class P> struct member_callee : P {
  using object = C;
};
template <class C, class R, class... A> struct callee_traits<R (C::*)(A...)> : member_callee<C, plain_callee<R, A...>> {};
template <class C, class R, class... A>
struct callee_traits<R (C::*)(A...) const> : member_callee<C, plain_callee<R, A...>> {};
template <class C, class R, class... A>
struct callee_traits<R (C::*)(A...) noexcept> : member_callee<C, plain_callee<R, A...>> {};
template <class C, class R, class... A>
struct callee_traits<R (C::*)(A...) const noexcept> : member_callee<C, plain_callee<R, A...>> {};
template <class F>
  requires(std::is_class_v<F> && std::is_empty_v<F> && requires { &F::operator(); })
struct callee_traits<F> : lambda_traits<decltype(&F::operator())> {};
template <class F> concept Callee = requires { typename callee_traits<F>::ret; };

// The callee's identity: its type, plus its pointer value if it has one.
template <class F> inline constexpr char callee_tag = 0;
template <class Fn> std::string callee_identity(const Fn& fn) {
  const void* tag = &callee_tag<Fn>;
  std::string id(reinterpret_cast<const char*>(&tag), sizeof tag);
  if constexpr (!std::is_empty_v<Fn>) id.append(reinterpret_cast<const char*>(&fn), sizeof fn);
  return id;
}

struct CallKeyWriter {
  CallSite* site;
  void leaf(const std::string&, Tensor& t) {
    site->operands.push_back(t);
    append_shape_key(site->key, t.shape());
  }
  template <class O> void leaf(const std::string&, O&) {
    static_assert(dependent_false_v<O>, "radix: call() arguments hold Tensors and plain values, not Buffers or Shapes");
  }
  template <class V> void value(const std::string&, V& v) {
    site->key.push_back('V');
    site->key.push_back(static_cast<char>(sizeof(V)));
    site->key.append(reinterpret_cast<const char*>(&v), sizeof(V));
  }
  template <class T> void vector(const std::string&, std::vector<T>& v) {
    const uint64_t n = v.size();
    site->key.push_back('N');
    site->key.append(reinterpret_cast<const char*>(&n), sizeof n);
  }
};

// Puts tensors[0..] into a structure's Tensor leaves, in walk order.
struct TensorFiller {
  std::span<const Tensor> tensors;
  size_t next = 0;
  void leaf(const std::string&, Tensor& t) { t = tensors[next++]; }
  template <class O> void leaf(const std::string&, O&) {}
  template <class V> void value(const std::string&, V&) {}
  template <class T> void vector(const std::string&, std::vector<T>&) {}
};

struct ResultTensors {
  std::vector<Tensor>* out;
  void leaf(const std::string&, Tensor& t) { out->push_back(t); }
  template <class O> void leaf(const std::string&, O&) {
    static_assert(dependent_false_v<O>, "radix: a call()ed function returns Tensors, plain values or structures of them");
  }
  template <class V> void value(const std::string&, V&) {}
  template <class T> void vector(const std::string&, std::vector<T>&) {}
};

struct NoObject {
  template <class V> void visit(V&&) {}
};

template <class Ret, class Obj, class Params, class Invoke>
Ret call_typed(CallSite& site, Obj obj, Params params, Invoke invoke) {
  CallKeyWriter keys{&site};
  walk(keys, obj, "");
  std::apply([&](auto&... p) { (walk(keys, p, ""), ...); }, params);
  std::shared_ptr<const void> typed;
  std::vector<Tensor> outs = call_flat(
      site,
      [&](std::span<const Tensor> in, std::shared_ptr<const void>& first) {
        TensorFiller fill{in};
        Obj o = obj;
        walk(fill, o, "");
        Params p = params;
        std::apply([&](auto&... e) { (walk(fill, e, ""), ...); }, p);
        Ret r = std::apply([&](auto&... e) -> Ret { return invoke(o, e...); }, p);
        std::vector<Tensor> flat;
        ResultTensors collect{&flat};
        walk(collect, r, "");
        first = std::make_shared<const Ret>(std::move(r));
        return flat;
      },
      typed);
  Ret r = *static_cast<const Ret*>(typed.get());
  TensorFiller fill{outs};
  walk(fill, r, "");
  return r;
}

}  // namespace detail

// Calls `fn` on `args` as a traced function call, naming it `name`.
template <class Fn, class... Args>
  requires detail::Callee<Fn>
typename detail::callee_traits<Fn>::ret call(std::string_view name, Fn fn, Args&&... args) {
  using Traits = detail::callee_traits<Fn>;
  using Obj = typename Traits::object;
  using Ret = typename Traits::ret;
  using Params = typename Traits::params;
  static_assert(!std::is_void_v<Ret>, "radix: a call()ed function returns its results");
  detail::CallSite site;
  site.identity = detail::callee_identity(fn);
  if constexpr (std::is_void_v<Obj>) {
    static_assert(sizeof...(Args) == std::tuple_size_v<Params>,
                  "radix: call(fn, args...) needs one argument per parameter of fn");
    site.name = name.empty() ? "fn" : std::string(name);
    return detail::call_typed<Ret>(site, detail::NoObject{}, Params(std::forward<Args>(args)...),
                                   [fn](detail::NoObject&, auto&... p) -> Ret { return fn(p...); });
  } else {
    static_assert(sizeof...(Args) == 1 + std::tuple_size_v<Params>,
                  "radix: call(&C::method, object, args...) needs the object, then one argument per parameter");
    site.name = name.empty() ? detail::short_type_name(detail::pretty_type<Obj>()) : std::string(name);
    return [&]<class O, class... Rest>(O&& obj, Rest&&... rest) {
      return detail::call_typed<Ret>(site, Obj(std::forward<O>(obj)), Params(std::forward<Rest>(rest)...),
                                     [fn](Obj& o, auto&... p) -> Ret { return (o.*fn)(p...); });
    }(std::forward<Args>(args)...);
  }
}

// Same, named after the object's class (member functions) or "fn".
template <class Fn, class... Args>
  requires detail::Callee<Fn>
typename detail::callee_traits<Fn>::ret call(Fn fn, Args&&... args) {
  return call(std::string_view(), fn, std::forward<Args>(args)...);
}

// Anything else (a capturing lambda, a functor with state, a generic lambda):
// its state or overloads could not be part of the cache key.
template <class Fn, class... Args>
  requires(!detail::Callee<Fn> && !std::is_convertible_v<Fn, std::string_view>)
void call(Fn, Args&&...) {
  static_assert(detail::dependent_false_v<Fn>,
                "radix: call() takes a pointer to a function or member function, or a captureless non-generic "
                "lambda (pass what a lambda would capture as arguments)");
}

}  // namespace radix
