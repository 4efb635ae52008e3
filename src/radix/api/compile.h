// The typed compile API (templates live here, at the API edge; the core is
// trace() + Platform::compile + Executable::call).
//
//   // A free function or non-generic lambda over Tensors:
//   auto exe = compile_fn(platform, [](Tensor a, Tensor b) { return a + b; },
//                         Shape(DType::kF32, {4}), Shape(DType::kF32, {4}));
//   Result<Buffer> c = exe->call(a_buf, b_buf);
//
//   // A model struct (see api/visit.h) and its forward method:
//   auto exe = compile_model(platform, tensors_like(weights), &Mlp<Tensor>::forward,
//                            Shape(DType::kF32, {8, 64}));
//   auto ready = exe->prepare(std::move(weights));   // binds weights once
//   Result<Buffer> y = ready->call(x);               // many times
//
// Argument specs: a Shape for a Tensor parameter, or the parameter's own
// type filled with placeholder Tensors (structs, arrays, tuples).
// Results: a Tensor becomes a Buffer, a struct / tuple / array / vector of
// Tensors the same structure of Buffers (Bufferized<R>).
//
// Ownership: an Exe shares its compiled program with every ExeWithWeights
// prepared from it; prepare() takes the weights (or shares them with
// prepare_shared), so they live as long as the ExeWithWeights. call() is
// const and thread-safe; the caller owns the returned Buffers.
#pragma once

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "radix/api/visit.h"
#include "radix/runtime/platform.h"
#include "radix/trace/compilation_context.h"
#include "radix/trace/trace_error.h"

namespace radix {

// The model of a plain function: no weights.
struct NoModel {
  template <class V> void visit(V&&) {}
};
template <class To> struct RebindLeaf<NoModel, To> { using type = NoModel; };

struct CompileFnOptions {
  TraceOptions trace;
  CompileOptions compile;
};

namespace detail {

template <class T> struct fn_traits : fn_traits<decltype(&T::operator())> {};
template <class R, class... A> struct fn_traits<R (*)(A...)> { using ret = R; using args = std::tuple<std::decay_t<A>...>; };
template <class R, class... A> struct fn_traits<R(A...)> : fn_traits<R (*)(A...)> {};
template <class C, class R, class... A> struct fn_traits<R (C::*)(A...) const> : fn_traits<R (*)(A...)> {};
template <class C, class R, class... A> struct fn_traits<R (C::*)(A...)> : fn_traits<R (*)(A...)> {};

template <class P, class S>
P to_placeholder(const S& spec) {
  if constexpr (std::is_same_v<P, Tensor> && std::is_same_v<S, Shape>) return Tensor::placeholder(spec);
  else if constexpr (std::is_same_v<P, S>) return spec;
  else static_assert(dependent_false_v<P>, "radix: argument spec must be a Shape (for a Tensor parameter) or "
                                           "the parameter's type filled with placeholder Tensors");
}

// Collects shapes and names of placeholder leaves.
struct ShapeCollector {
  std::vector<Shape>* shapes;
  std::vector<std::string>* names;
  void leaf(const std::string& p, Tensor& t) {
    shapes->push_back(t.shape());
    names->push_back(p);
  }
  template <class O> void leaf(const std::string& p, O&) {
    static_assert(dependent_false_v<O>, "radix: traced structures hold Tensors only");
  }
  template <class T> void vector(const std::string&, std::vector<T>&) {}
};

// Replaces placeholder leaves with the traced inputs, in walk order.
struct InputAssigner {
  std::span<const Tensor> inputs;
  size_t next = 0;
  void leaf(const std::string&, Tensor& t) { t = inputs[next++]; }
  template <class O> void leaf(const std::string&, O&) {}
  template <class T> void vector(const std::string&, std::vector<T>&) {}
};

// Flattens a traced result and records its vector sizes.
struct ResultFlattener {
  std::vector<Tensor>* out;
  std::vector<size_t>* sizes;
  void leaf(const std::string&, Tensor& t) { out->push_back(t); }
  template <class O> void leaf(const std::string&, O&) {
    static_assert(dependent_false_v<O>, "radix: a traced function returns Tensors (or structures of them)");
  }
  template <class T> void vector(const std::string&, std::vector<T>& v) { sizes->push_back(v.size()); }
};

// Collects const Buffer* of a buffer structure, in walk order.
struct BufferCollector {
  std::vector<const Buffer*>* out;
  void leaf(const std::string&, Buffer& b) { out->push_back(&b); }
  template <class O> void leaf(const std::string&, O&) {}
  template <class T> void vector(const std::string&, std::vector<T>&) {}
};

template <class T>
void collect_buffers(const T& obj, std::vector<const Buffer*>& out) {
  BufferCollector c{&out};
  walk(c, const_cast<T&>(obj), "");
}

// An argument structure lent (lvalue) or moved in (rvalue: its Buffers may
// be donated, see Executable): appends its buffers to `inputs` and, for a
// moved one, the same pointers to `moved` (null for lent ones).
template <class A>
void collect_arg(A&& arg, std::vector<const Buffer*>& inputs, std::vector<Buffer*>& moved) {
  const size_t first = inputs.size();
  collect_buffers(arg, inputs);
  for (size_t i = first; i < inputs.size(); ++i)
    moved.push_back(std::is_rvalue_reference_v<A&&> ? const_cast<Buffer*>(inputs[i]) : nullptr);
}

// The untyped core shared by every typed executable: the compiled program and
// the layout of its results (the sizes of any vectors among them).
struct TypedCore {
  Executable exe;
  std::vector<size_t> result_vector_sizes;

  template <class R>
  Result<Bufferized<R>> call(std::span<const Buffer* const> inputs, std::span<Buffer* const> moved = {}) const {
    RADIX_ASSIGN_OR_RETURN(std::vector<Buffer> outs, exe.call(inputs, moved));
    if constexpr (std::is_same_v<R, Tensor>) {
      return std::move(outs[0]);
    } else {
      FillLeaves<Buffer> fill{result_vector_sizes, outs};
      Bufferized<R> r{};
      walk(fill, r, "");
      return r;
    }
  }
};

// A traced program and the layout of its results.
struct TypedTrace {
  TracedModule module;
  std::vector<size_t> result_vector_sizes;
};

template <class Model, class Method, class Ret, class ArgsTuple, class... Specs>
Result<TypedTrace> trace_typed(const Model& model, Method method, const CompileFnOptions& opts, const Specs&... specs) {
  static_assert(std::tuple_size_v<ArgsTuple> == sizeof...(Specs),
                "radix: give one argument spec per function parameter");
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  ShapeCollector sc{&shapes, &names};
  Model model_ph = model;
  walk(sc, model_ph, "");
  const size_t n_model = shapes.size();
  ArgsTuple args_ph = [&]<size_t... I>(std::index_sequence<I...>) {
    return ArgsTuple{to_placeholder<std::tuple_element_t<I, ArgsTuple>>(specs)...};
  }(std::index_sequence_for<Specs...>{});
  [&]<size_t... I>(std::index_sequence<I...>) {
    (walk(sc, std::get<I>(args_ph), "arg" + std::to_string(I)), ...);
  }(std::make_index_sequence<std::tuple_size_v<ArgsTuple>>{});
  for (size_t i = 0; i < shapes.size(); ++i)
    if (names[i].empty()) names[i] = i < n_model ? "model" : "arg";

  std::vector<size_t> vector_sizes;
  auto body = [&](std::span<const Tensor> inputs) -> std::vector<Tensor> {
    InputAssigner as{inputs};
    Model m = model_ph;
    walk(as, m, "");
    ArgsTuple a = args_ph;
    std::apply([&](auto&... e) { (walk(as, e, ""), ...); }, a);
    Ret r = std::apply([&](auto&... e) -> Ret { return std::invoke(method, m, e...); }, a);
    std::vector<Tensor> flat;
    vector_sizes.clear();
    ResultFlattener rf{&flat, &vector_sizes};
    walk(rf, r, "");
    return flat;
  };
  RADIX_ASSIGN_OR_RETURN(TracedModule traced, trace(opts.trace, shapes, names, n_model, body));
  return TypedTrace{std::move(traced), std::move(vector_sizes)};
}

template <class Model, class Method, class Ret, class ArgsTuple, class... Specs>
Result<TypedCore> compile_typed(const Platform& platform, const Model& model, Method method,
                                const CompileFnOptions& opts, const Specs&... specs) {
  RADIX_ASSIGN_OR_RETURN(TypedTrace t, (trace_typed<Model, Method, Ret, ArgsTuple>(model, method, opts, specs...)));
  RADIX_ASSIGN_OR_RETURN(Executable exe, platform.compile(t.module, opts.compile));
  return TypedCore{std::move(exe), std::move(t.result_vector_sizes)};
}

}  // namespace detail

template <class Model, class Sig> class ExeWithWeights;
template <class Model, class Sig> class Exe;

// A compiled model bound to its weights: call(args...) runs it.
template <class Model, class Ret, class... Args>
class ExeWithWeights<Model, Ret(Args...)> {
 public:
  using Weights = Bufferized<Model>;
  ExeWithWeights(std::shared_ptr<const detail::TypedCore> core, std::shared_ptr<const Weights> weights)
      : core_(std::move(core)), weights_(std::move(weights)) {
    detail::collect_buffers(*weights_, model_buffers_);
  }

  // One Bufferized argument per parameter (a Buffer for each Tensor), lent:
  // read only, the caller keeps them.
  Result<Bufferized<Ret>> call(const Bufferized<Args>&... args) const {
    std::vector<const Buffer*> inputs = model_buffers_;
    (detail::collect_buffers(args, inputs), ...);
    return core_->template call<Ret>(inputs);
  }
  // Some arguments moved in (std::move(cache)): a Buffer whose parameter is
  // donated to a result (Tensor::reuse_buffer) becomes that result, updated
  // in place, and the moved-from argument is left empty; see Executable.
  template <class... A>
    requires(sizeof...(A) == sizeof...(Args) &&
             (std::is_same_v<std::remove_cvref_t<A>, Bufferized<Args>> && ...) &&
             (std::is_rvalue_reference_v<A&&> || ...))
  Result<Bufferized<Ret>> call(A&&... args) const {
    std::vector<const Buffer*> inputs = model_buffers_;
    std::vector<Buffer*> moved(inputs.size(), nullptr);
    (detail::collect_arg(std::forward<A>(args), inputs, moved), ...);
    return core_->template call<Ret>(inputs, moved);
  }
  const Executable& executable() const { return core_->exe; }
  const Weights& weights() const { return *weights_; }

 private:
  std::shared_ptr<const detail::TypedCore> core_;
  std::shared_ptr<const Weights> weights_;
  std::vector<const Buffer*> model_buffers_;
};

// A compiled model without weights. prepare() binds them (checked against
// the traced shapes) and returns an ExeWithWeights; the Exe can be prepared
// with several weight sets.
template <class Model, class Ret, class... Args>
class Exe<Model, Ret(Args...)> {
 public:
  using Weights = Bufferized<Model>;
  using Prepared = ExeWithWeights<Model, Ret(Args...)>;
  explicit Exe(detail::TypedCore core) : core_(std::make_shared<const detail::TypedCore>(std::move(core))) {}

  // Takes ownership of the weights.
  Result<Prepared> prepare(Weights&& weights) const {
    return prepare_shared(std::make_shared<const Weights>(std::move(weights)));
  }
  // Shares weights with other executables (e.g. several sequence lengths).
  Result<Prepared> prepare_shared(std::shared_ptr<const Weights> weights) const {
    std::vector<const Buffer*> bufs;
    detail::collect_buffers(*weights, bufs);
    const Signature& sig = core_->exe.signature();
    if (bufs.size() != sig.n_model)
      return invalid_argument("prepare: the model was traced with " + std::to_string(sig.n_model) +
                              " weight tensors, got " + std::to_string(bufs.size()) + " buffers");
    RADIX_RETURN_IF_ERROR(core_->exe.check_inputs(bufs, 0));
    return Prepared(core_, std::move(weights));
  }
  const Executable& executable() const { return core_->exe; }

 private:
  std::shared_ptr<const detail::TypedCore> core_;
};

// Traces and compiles a model's method. `model` holds placeholder Tensors
// (see tensors_like); `method` is e.g. &Mlp<Tensor>::forward.
template <class Model, class Method, class... Specs>
auto compile_model(const Platform& platform, const Model& model, Method method, const Specs&... specs) {
  return compile_model(platform, CompileFnOptions{}, model, method, specs...);
}

template <class Model, class Method, class... Specs>
auto compile_model(const Platform& platform, const CompileFnOptions& opts, const Model& model, Method method,
                   const Specs&... specs) {
  using Traits = detail::fn_traits<Method>;
  using Ret = typename Traits::ret;
  using ArgsTuple = typename Traits::args;
  using ExeT = decltype([]<class... A>(std::tuple<A...>*) { return std::type_identity<Exe<Model, Ret(A...)>>{}; }(
      static_cast<ArgsTuple*>(nullptr)))::type;
  auto core = detail::compile_typed<Model, Method, Ret, ArgsTuple>(platform, model, method, opts, specs...);
  if (!core.ok()) return Result<ExeT>(core.status());
  return Result<ExeT>(ExeT(std::move(core).value()));
}

// Traces and compiles a function (pointer or non-generic lambda) of Tensors.
template <class Fn, class... Specs>
auto compile_fn(const Platform& platform, const CompileFnOptions& opts, Fn fn, const Specs&... specs) {
  using Traits = detail::fn_traits<std::decay_t<Fn>>;
  using Ret = typename Traits::ret;
  using ArgsTuple = typename Traits::args;
  using PreparedT = decltype([]<class... A>(std::tuple<A...>*) {
    return std::type_identity<ExeWithWeights<NoModel, Ret(A...)>>{};
  }(static_cast<ArgsTuple*>(nullptr)))::type;
  auto method = [&fn](const NoModel&, auto&... a) -> Ret { return fn(a...); };
  auto core = detail::compile_typed<NoModel, decltype(method), Ret, ArgsTuple>(platform, NoModel{}, method, opts,
                                                                                specs...);
  if (!core.ok()) return Result<PreparedT>(core.status());
  return Result<PreparedT>(PreparedT(std::make_shared<const detail::TypedCore>(std::move(core).value()),
                                     std::make_shared<const NoModel>()));
}

template <class Fn, class... Specs>
auto compile_fn(const Platform& platform, Fn fn, const Specs&... specs) {
  return compile_fn(platform, CompileFnOptions{}, fn, specs...);
}

// Traces a model's method as compile_model does, without compiling.
template <class Model, class Method, class... Specs>
Result<TracedModule> trace_model(const CompileFnOptions& opts, const Model& model, Method method,
                                 const Specs&... specs) {
  using Traits = detail::fn_traits<Method>;
  RADIX_ASSIGN_OR_RETURN(detail::TypedTrace t, (detail::trace_typed<Model, Method, typename Traits::ret,
                                                                    typename Traits::args>(model, method, opts, specs...)));
  return std::move(t.module);
}

// Traces a function as compile_fn does, without compiling: the module to
// hand to Platform::compile, compile_only (e.g. CUDA code without a device)
// or cache_key.
template <class Fn, class... Specs>
Result<TracedModule> trace_fn(const CompileFnOptions& opts, Fn fn, const Specs&... specs) {
  using Traits = detail::fn_traits<std::decay_t<Fn>>;
  auto method = [&fn](const NoModel&, auto&... a) -> typename Traits::ret { return fn(a...); };
  RADIX_ASSIGN_OR_RETURN(detail::TypedTrace t, (detail::trace_typed<NoModel, decltype(method), typename Traits::ret,
                                                                    typename Traits::args>(NoModel{}, method, opts, specs...)));
  return std::move(t.module);
}

}  // namespace radix
