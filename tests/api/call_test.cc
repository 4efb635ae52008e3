// call(): one private func.func per callee and argument signature, a
// func.call per call; donations and memory kinds through calls; calls in
// control flow; errors. Numbers are compared with the same model traced
// without call(); the CPU backend keeps the calls, so a repeated layer is
// scheduled and compiled once.
#include <gtest/gtest.h>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

using testing::count_of;

// Traces f(model, args) with the model's tensors first, as compile_model does.
template <class Model, class F>
Result<TracedModule> trace_model(const Model& model, const std::vector<Shape>& args, F f) {
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  for_each_leaf<Tensor>(model, [&](const std::string& p, const Tensor& t) {
    shapes.push_back(t.shape());
    names.push_back(p);
  });
  const size_t n_model = shapes.size();
  for (size_t i = 0; i < args.size(); ++i) {
    shapes.push_back(args[i]);
    names.push_back("arg" + std::to_string(i));
  }
  return trace(TraceOptions{}, shapes, names, n_model, [&](std::span<const Tensor> in) {
    size_t k = 0;
    Model m = map_leaves<Tensor>(model, [&](const std::string&, const Tensor&) { return in[k++]; });
    return f(m, in.subspan(n_model));
  });
}

template <class... B> std::vector<Buffer> buffers(B&&... b) {
  std::vector<Buffer> v;
  (v.push_back(std::move(b)), ...);
  return v;
}

Buffer f16_buffer(const Shape& s, const std::vector<float>& v) {
  std::vector<uint16_t> bits;
  for (float x : v) bits.push_back(float_to_f16(x));
  return must(cpu().buffer(s, bits));
}

// Compiles and runs `m`: every output as floats (f16 widened exactly).
std::vector<std::vector<float>> run(const TracedModule& m, const std::vector<Buffer>& inputs) {
  std::vector<const Buffer*> in;
  for (const Buffer& b : inputs) in.push_back(&b);
  std::vector<std::vector<float>> out;
  for (const Buffer& b : must(must(cpu().compile(m)).call(in))) {
    if (b.shape().dtype() == DType::kF32) {
      out.push_back(must(b.to_host<float>()));
      continue;
    }
    out.emplace_back();
    for (uint16_t bits : must(b.to_host<uint16_t>())) out.back().push_back(f16_to_float(bits));
  }
  return out;
}

// ------------------------------------------------ the seeds' FnCache test

template <class T> struct Layer {
  T w, b;  // [o, d], [o]
  template <class V> void visit(V&& v) { v("w", w); v("b", b); }
  Tensor forward(Tensor x) const { return relu(dot_general(w, x, {{}, {}, {-1}, {0}}) + b); }
};

template <class T> struct Net {
  std::array<Layer<T>, 3> layers;
  template <class V> void visit(V&& v) { v("layers", layers); }
};

// The seeds' weights: layers 0 and 1 are [2,2]/[2], layer 2 is [3,2]/[3].
std::vector<Buffer> seed_net_weights() {
  const Shape w2(DType::kF16, {2, 2}), b2(DType::kF16, {2}), w3(DType::kF16, {3, 2}), b3(DType::kF16, {3});
  return buffers(f16_buffer(w2, {1, -1, 0, 1}), f16_buffer(b2, {0, 0}), f16_buffer(w2, {1, 2, 1, -1}),
                 f16_buffer(b2, {10, 10}), f16_buffer(w3, {1, 2, 0, 1, -1, 0}), f16_buffer(b3, {-10, -10, -10}));
}

Net<Tensor> seed_net_placeholders() {
  auto ph = [](std::initializer_list<int64_t> d) { return Tensor::placeholder(Shape(DType::kF16, d)); };
  return {{Layer<Tensor>{ph({2, 2}), ph({2})}, Layer<Tensor>{ph({2, 2}), ph({2})}, Layer<Tensor>{ph({3, 2}), ph({3})}}};
}

TEST(Call, FnCacheThreeLayerNet) {
  const Shape xs(DType::kF16, {2});
  auto net_fn = [](bool use_call) {
    return [use_call](const Net<Tensor>& net, std::span<const Tensor> in) {
      Tensor x = in[0];
      for (const Layer<Tensor>& l : net.layers) x = use_call ? call(&Layer<Tensor>::forward, l, x) : l.forward(x);
      return std::vector<Tensor>{x};
    };
  };
  TracedModule with_calls = must(trace_model(seed_net_placeholders(), {xs}, net_fn(true)));
  TracedModule inlined = must(trace_model(seed_net_placeholders(), {xs}, net_fn(false)));
  const std::string ir = with_calls.to_string();
  // Layers 0 and 1 share one function; layer 2 (other shapes) has its own.
  EXPECT_EQ(count_of(ir, "func.func private @Layer_"), 2u) << ir;
  EXPECT_EQ(count_of(ir, "call @Layer_"), 3u) << ir;
  EXPECT_EQ(count_of(inlined.to_string(), "call @"), 0u);
  // Names hash shapes, not pointers: the same program traces to the same text.
  EXPECT_EQ(must(trace_model(seed_net_placeholders(), {xs}, net_fn(true))).to_string(), ir);

  std::vector<Buffer> inputs = seed_net_weights();
  inputs.push_back(f16_buffer(xs, {-1, 1}));
  std::vector<float> got = run(with_calls, inputs)[0], want = run(inlined, inputs)[0];
  // relu(W3 relu(W2 relu(W1 x) + 10) - 10) = {20, 0, 0}: exact in f16.
  EXPECT_EQ(want, (std::vector<float>{20, 0, 0}));
  EXPECT_TRUE(testing::all_close(got, want, 0, 1e-4));
}

// Six identical f32 layers: the callee stays one function through every
// stage (scheduled, vectorized and compiled once, called six times), and the
// result matches a double-precision loop over the same weights.
template <class T> struct DenseRelu {
  T w, b;  // [d, o], [o]
  template <class V> void visit(V&& v) { v("w", w); v("b", b); }
  Tensor forward(Tensor x) const { return relu(nn::linear(x, w, b)); }
};
template <class T> struct DenseNet {
  std::array<DenseRelu<T>, 6> layers;
  template <class V> void visit(V&& v) { v("layers", layers); }
};

TEST(Call, RepeatedLayerIsCompiledOnce) {
  constexpr int64_t n = 16, d = 64;
  const Shape ws(DType::kF32, {d, d}), bs(DType::kF32, {d}), xs(DType::kF32, {n, d});
  DenseNet<Tensor> net;
  for (auto& l : net.layers) l = {Tensor::placeholder(ws), Tensor::placeholder(bs)};
  TracedModule m = must(trace_model(net, {xs}, [](const DenseNet<Tensor>& nt, std::span<const Tensor> in) {
    Tensor x = in[0];
    for (const DenseRelu<Tensor>& l : nt.layers) x = call("dense", &DenseRelu<Tensor>::forward, l, x);
    return std::vector<Tensor>{x};
  }));
  std::vector<std::vector<float>> w, b;
  std::vector<Buffer> inputs;
  for (uint32_t i = 0; i < 6; ++i) {
    w.push_back(testing::random_vec<float>(d * d, -0.2, 0.2, 100 + i));
    b.push_back(testing::random_vec<float>(d, -0.1, 0.1, 200 + i));
    inputs.push_back(must(cpu().buffer(ws, w.back())));
    inputs.push_back(must(cpu().buffer(bs, b.back())));
  }
  std::vector<float> x0 = testing::random_vec<float>(n * d, -1, 1, 7);
  inputs.push_back(must(cpu().buffer(xs, x0)));

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("radix-call-once-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  CompileOptions o;
  o.diagnostics.dump = {"schedule", "lower"};
  o.diagnostics.dump_dir = dir.string();
  Executable exe = must(cpu().compile(m, o));
  const std::string scheduled = testing::stage_dump(dir, "schedule.mlir");
  const std::string lowered = testing::stage_dump(dir, "lower.mlir");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(count_of(scheduled, "func.func private @dense_"), 1u) << scheduled;
  EXPECT_EQ(count_of(scheduled, "call @dense_"), 6u);
  EXPECT_NE(scheduled.find("vector.fma"), std::string::npos) << "the callee's matmul is vectorized";
  EXPECT_EQ(count_of(lowered, "llvm.func @dense_"), 1u);
  EXPECT_EQ(count_of(lowered, "llvm.call @dense_"), 6u);

  std::vector<const Buffer*> in;
  for (const Buffer& buf : inputs) in.push_back(&buf);
  std::vector<float> got = must(must(exe.call(in))[0].to_host<float>());
  std::vector<double> x(x0.begin(), x0.end());
  for (int l = 0; l < 6; ++l) {
    std::vector<double> y(n * d);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j) {
        double acc = b[l][j];
        for (int64_t k = 0; k < d; ++k) acc += x[i * d + k] * double(w[l][k * d + j]);
        y[i * d + j] = acc > 0 ? acc : 0;
      }
    x = y;
  }
  std::vector<float> want(x.begin(), x.end());
  EXPECT_TRUE(testing::all_close(got, want, 1e-4, 1e-5));
}

// ------------------------------------ the seeds' mixed integer/tensor test

int g_num_call = 0;

template <class T> struct CountingLayer {
  T w;
  template <class V> void visit(V&& v) { v("w", w); }
  // Mutating global state from a callee is for this test only: a cache hit
  // does not run it, so it is read once per key.
  std::tuple<Tensor, int> forward(Tensor x) const {
    ++g_num_call;
    return {dot_general(w, x, {{}, {}, {-1}, {0}}) + static_cast<double>(g_num_call), g_num_call};
  }
};

TEST(Call, FnCacheWithMixedIntegerTensorResults) {
  const Shape xs(DType::kF16, {2});
  auto ph = [](std::initializer_list<int64_t> d) { return Tensor::placeholder(Shape(DType::kF16, d)); };
  std::array<CountingLayer<Tensor>, 3> layers{{{ph({2, 2})}, {ph({2, 2})}, {ph({3, 2})}}};
  std::vector<int> counters, returned;
  g_num_call = 0;
  TracedModule m = must(trace_model(layers, {xs}, [&](const auto& ls, std::span<const Tensor> in) {
    Tensor x = in[0];
    for (const CountingLayer<Tensor>& l : ls) {
      int y = 0;
      std::tie(x, y) = call(&CountingLayer<Tensor>::forward, l, x);
      counters.push_back(g_num_call);
      returned.push_back(y);
    }
    return std::vector<Tensor>{x};
  }));
  // The second call hits the cache (same shapes): the callee does not run.
  EXPECT_EQ(counters, (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(returned, (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(count_of(m.to_string(), "func.func private"), 2u) << m.to_string();

  TracedModule ref = must(trace_model(layers, {xs}, [](const auto& ls, std::span<const Tensor> in) {
    Tensor x = in[0];
    const double bias[3] = {1, 1, 2};
    for (size_t i = 0; i < 3; ++i) x = dot_general(ls[i].w, x, {{}, {}, {-1}, {0}}) + bias[i];
    return std::vector<Tensor>{x};
  }));
  std::vector<Buffer> inputs =
      buffers(f16_buffer(Shape(DType::kF16, {2, 2}), {1, -1, 0, 1}), f16_buffer(Shape(DType::kF16, {2, 2}), {1, 2, 1, -1}),
              f16_buffer(Shape(DType::kF16, {3, 2}), {1, 2, 0, 1, -1, 0}), f16_buffer(xs, {-1, 1}));
  std::vector<float> got = run(m, inputs)[0], want = run(ref, inputs)[0];
  EXPECT_EQ(want, (std::vector<float>{2, 0, -2}));  // small integers: exact in f16
  EXPECT_TRUE(testing::all_close(got, want, 0, 1e-4));
}

// -------------------------------------------------- a 12-layer model

template <class T> struct Dense {
  T w, b;  // f32[d,d], f32[d]
  template <class V> void visit(V&& v) { v("w", w); v("b", b); }
  Tensor forward(Tensor x) const { return tanh(matmul(x, w) + b); }
};

template <class T> struct Deep {
  std::vector<Dense<T>> layers;
  template <class V> void visit(V&& v) { v("layers", layers); }
};

TEST(Call, TwelveLayersAreOneFunctionCalledTwelveTimes) {
  const int64_t d = 16, batch = 4;
  const Shape ws(DType::kF32, {d, d}), bs(DType::kF32, {d}), xs(DType::kF32, {batch, d});
  Deep<Tensor> model;
  std::vector<Buffer> inputs;
  for (uint32_t i = 0; i < 12; ++i) {
    model.layers.push_back({Tensor::placeholder(ws), Tensor::placeholder(bs)});
    inputs.push_back(must(cpu().buffer(ws, testing::random_vec<float>(d * d, -0.4, 0.4, 10 + i))));
    inputs.push_back(must(cpu().buffer(bs, testing::random_vec<float>(d, -0.2, 0.2, 100 + i))));
  }
  inputs.push_back(must(cpu().buffer(xs, testing::random_vec<float>(batch * d, -1, 1, 7))));
  auto fn = [](bool use_call) {
    return [use_call](const Deep<Tensor>& m, std::span<const Tensor> in) {
      Tensor x = in[0];
      for (const Dense<Tensor>& l : m.layers) x = use_call ? call(&Dense<Tensor>::forward, l, x) : l.forward(x);
      return std::vector<Tensor>{x};
    };
  };
  TracedModule with_calls = must(trace_model(model, {xs}, fn(true)));
  const std::string ir = with_calls.to_string();
  EXPECT_EQ(count_of(ir, "func.func private"), 1u) << ir;
  EXPECT_EQ(count_of(ir, "call @Dense_"), 12u) << ir;
  EXPECT_EQ(count_of(ir, "linalg.matmul"), 1u) << ir;  // the layer's body, once
  std::vector<float> got = run(with_calls, inputs)[0], want = run(must(trace_model(model, {xs}, fn(false))), inputs)[0];
  // The same f32 ops after inlining; only codegen may differ (tanh approximation, fusion).
  EXPECT_TRUE(testing::all_close(got, want, 1e-5, 1e-6));
}

// ----------------------------------------------- plain-value arguments

enum class Sign { kPlus, kMinus };

Tensor scaled(Tensor x, int k, Sign sign) { return x * static_cast<double>(sign == Sign::kPlus ? k : -k); }

TEST(Call, PlainArgumentValuesAreInTheKey) {
  const Shape xs(DType::kF32, {4}, {"d"});
  std::vector<std::string> result_shapes;
  auto trace_it = [&] {
    return must(trace_model(NoModel{}, {xs}, [&](const NoModel&, std::span<const Tensor> in) {
      Tensor a = call(&scaled, in[0], 2, Sign::kPlus);
      Tensor b = call(&scaled, in[0], 2, Sign::kPlus);  // same key: same function
      Tensor c = call(&scaled, in[0], 3, Sign::kPlus);  // another int
      Tensor d = call("neg", &scaled, in[0], 2, Sign::kMinus);  // another enum, a chosen name
      result_shapes = {a.shape().to_string(), b.shape().to_string()};
      return std::vector<Tensor>{a + b + c + d};
    }));
  };
  TracedModule m = trace_it();
  const std::string ir = m.to_string();
  EXPECT_EQ(count_of(ir, "func.func private"), 3u) << ir;
  EXPECT_EQ(count_of(ir, "func.func private @fn_"), 2u) << ir;
  EXPECT_EQ(count_of(ir, "func.func private @neg_"), 1u) << ir;
  EXPECT_EQ(count_of(ir, "call @"), 4u) << ir;
  EXPECT_EQ(result_shapes, (std::vector<std::string>{"f32[d=4]", "f32[d=4]"}));  // tags kept on a hit
  EXPECT_EQ(trace_it().to_string(), ir);
  std::vector<float> x = {1, -2, 0.5f, 3};
  std::vector<float> got = run(m, buffers(must(cpu().buffer(xs, x))))[0];
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i], x[i] * (2 + 2 + 3 - 2)) << i;
}

// ------------------------------------------------------------- donation

template <class T> struct Local {
  T bias;  // f16[8]
  template <class V> void visit(V&& v) { v("bias", bias); }
  Tensor forward(Tensor x) const { return (x + bias).reuse_buffer(x); }
  // Calls forward: its donation passes through two levels of calls.
  Tensor twice(Tensor x) const { return call(&Local::forward, *this, call(&Local::forward, *this, x)); }
};

const Shape kS8(DType::kF16, {8});

TEST(CallDonation, ResultReusingAnArgumentMarksMain) {
  Local<Tensor> model{Tensor::placeholder(kS8)};
  // The seeds' addDonationsAttributes test: @main(bias, x), result reuses x.
  TracedModule direct = must(trace_model(model, {kS8}, [](const Local<Tensor>& l, std::span<const Tensor> in) {
    return std::vector<Tensor>{l.forward(in[0])};
  }));
  EXPECT_NE(direct.to_string().find("tf.aliasing_output = 0 : i32"), std::string::npos) << direct.to_string();
  EXPECT_EQ(direct.signature().output_donations, std::vector<int>{1});
  // The same through call(), and through a call that calls.
  for (bool nested : {false, true}) {
    TracedModule m = must(trace_model(model, {kS8}, [nested](const Local<Tensor>& l, std::span<const Tensor> in) {
      return std::vector<Tensor>{nested ? call(&Local<Tensor>::twice, l, in[0]) : call(&Local<Tensor>::forward, l, in[0])};
    }));
    const std::string ir = m.to_string();
    EXPECT_EQ(count_of(ir, "tf.aliasing_output"), 1u) << ir;  // on @main only
    EXPECT_NE(ir.find("%arg1: tensor<8xf16> {radix.name = \"arg0\", tf.aliasing_output = 0 : i32}"), std::string::npos)
        << ir;
    EXPECT_EQ(m.signature().output_donations, std::vector<int>{1}) << nested;
  }
}

TEST(CallDonation, ChainedCallsDonateTwoMainArguments) {
  // The seeds' later test: x1 = inner(x), x2 = inner(x1); return {x1 reusing y, x2}.
  Local<Tensor> model{Tensor::placeholder(kS8)};
  TracedModule m = must(trace_model(model, {kS8, kS8}, [](const Local<Tensor>& l, std::span<const Tensor> in) {
    Tensor x1 = call(&Local<Tensor>::forward, l, in[0]);
    Tensor x2 = call(&Local<Tensor>::forward, l, x1);
    return std::vector<Tensor>{x1.reuse_buffer(in[1]), x2};
  }));
  const std::string ir = m.to_string();
  EXPECT_NE(ir.find("tf.aliasing_output = 0 : i32"), std::string::npos) << ir;
  EXPECT_NE(ir.find("tf.aliasing_output = 1 : i32"), std::string::npos) << ir;
  // Arguments: bias, x, y. y gives its buffer to result 0, x (through both calls) to result 1.
  EXPECT_EQ(m.signature().output_donations, (std::vector<int>{2, 1}));

  // One callee called on two different @main arguments.
  TracedModule two = must(trace_model(model, {kS8, kS8}, [](const Local<Tensor>& l, std::span<const Tensor> in) {
    return std::vector<Tensor>{call(&Local<Tensor>::forward, l, in[0]), call(&Local<Tensor>::forward, l, in[1])};
  }));
  EXPECT_EQ(two.signature().output_donations, (std::vector<int>{1, 2}));
  EXPECT_EQ(count_of(two.to_string(), "func.func private"), 1u) << two.to_string();
  EXPECT_NE(two.to_string().find("tf.aliasing_output = 1 : i32"), std::string::npos) << two.to_string();

  // It runs: x1 = x + b, x2 = x + 2b.
  auto out = run(m, buffers(f16_buffer(kS8, {1, 1, 1, 1, 1, 1, 1, 1}), f16_buffer(kS8, {0, 1, 2, 3, 4, 5, 6, 7}),
                            f16_buffer(kS8, {0, 0, 0, 0, 0, 0, 0, 0})));
  EXPECT_EQ(out[0], (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(out[1], (std::vector<float>{2, 3, 4, 5, 6, 7, 8, 9}));
}

std::tuple<Tensor, Tensor> donate_twice(Tensor x) { return {(x + 1.0).reuse_buffer(x), (x * 2.0).reuse_buffer(x)}; }

TEST(CallDonation, OneArgumentDonatedToTwoResultsIsAnError) {
  const Shape s(DType::kF32, {4});
  auto m = trace_model(NoModel{}, {s}, [](const NoModel&, std::span<const Tensor> in) {
    auto [a, b] = call(&donate_twice, in[0]);
    return std::vector<Tensor>{a, b};
  });
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kTraceError);
  EXPECT_NE(m.status().message().find("argument 0 (f32[4]) is donated to two results, 0 and 1"), std::string::npos)
      << m.status().message();
}

// ------------------------------------------------------- memory kinds

Tensor to_host_memory(Tensor x) { return (x * 2.0).to_memory(MemoryKind::kPinnedHost); }

TEST(CallMemoryKind, PinnedHostResultIsAttributedAndInTheSignature) {
  const Shape s(DType::kF32, {4});
  for (bool through_call : {false, true}) {
    TracedModule m = must(trace_model(NoModel{}, {s}, [through_call](const NoModel&, std::span<const Tensor> in) {
      Tensor pinned = through_call ? call(&to_host_memory, in[0]) : to_host_memory(in[0]);
      return std::vector<Tensor>{in[0] + 1.0, pinned};
    }));
    const std::string ir = m.to_string();
    EXPECT_EQ(count_of(ir, "mhlo.memory_kind"), 1u) << ir;  // device results carry none
    EXPECT_NE(ir.find("tensor<4xf32> {mhlo.memory_kind = \"pinned_host\"})"), std::string::npos) << ir;
    EXPECT_EQ(m.signature().output_memory_kinds, (std::vector<MemoryKind>{MemoryKind::kDevice, MemoryKind::kPinnedHost}));
  }
}

// ------------------------------------------------------- control flow

TEST(Call, InsideAForLoopBody) {
  const Shape ws(DType::kF32, {3, 3}), bs(DType::kF32, {3}), xs(DType::kF32, {3});
  Layer<Tensor> layer{Tensor::placeholder(ws), Tensor::placeholder(bs)};
  auto fn = [](bool use_call) {
    return [use_call](const Layer<Tensor>& l, std::span<const Tensor> in) {
      Tensor y = for_loop(0, 4, [&](const Tensor&, Tensor x) {
        return use_call ? call(&Layer<Tensor>::forward, l, x) : l.forward(x);
      }, in[0]);
      return std::vector<Tensor>{y};
    };
  };
  TracedModule looped = must(trace_model(layer, {xs}, fn(true)));
  const std::string ir = looped.to_string();
  EXPECT_EQ(count_of(ir, "call @Layer_"), 1u) << ir;
  EXPECT_LT(ir.find("scf.for"), ir.find("call @Layer_")) << ir;  // the call is in the loop
  std::vector<Buffer> in =
      buffers(must(cpu().buffer(ws, std::vector<float>{0.5f, -0.25f, 0, 0.125f, 0.5f, 0.25f, -0.5f, 0, 0.75f})),
              must(cpu().buffer(bs, std::vector<float>{0.1f, 0.2f, 0.3f})),
              must(cpu().buffer(xs, std::vector<float>{1, 2, 3})));
  std::vector<float> got = run(looped, in)[0], want = run(must(trace_model(layer, {xs}, fn(false))), in)[0];
  EXPECT_TRUE(testing::all_close(got, want, 1e-6, 1e-7));
}

// -------------------------------------------------------------- errors

template <class T> struct Leaky {
  T w;
  Tensor extra;  // not listed by visit(): not a parameter of the callee
  template <class V> void visit(V&& v) { v("w", w); }
  Tensor forward(Tensor x) const { return x * w + extra; }
  Tensor just_extra(Tensor) const { return extra; }
};

TEST(CallErrors, TensorCapturedFromTheCallerIsRefused) {
  const Shape s(DType::kF32, {4});
  for (auto method : {&Leaky<Tensor>::forward, &Leaky<Tensor>::just_extra}) {
    auto m = trace_model(NoModel{}, {s, s}, [method](const NoModel&, std::span<const Tensor> in) {
      Leaky<Tensor> leaky{in[0], in[1] * 2.0};
      return std::vector<Tensor>{call(method, leaky, in[1])};
    });
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), ErrorCode::kTraceError);
    const std::string msg = m.status().message();
    EXPECT_NE(msg.find("call(Leaky): "), std::string::npos) << msg;
    EXPECT_NE(msg.find("captured from an enclosing function: pass it as an argument of call()"), std::string::npos)
        << msg;
  }
}

TEST(CallErrors, OutsideTracingNamesCall) {
  try {
    (void)call(&to_host_memory, Tensor::placeholder(Shape(DType::kF32, {2})));
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("call(): no active CompilationContext"), std::string::npos) << e.what();
  }
}

TEST(CallErrors, ErrorInACalleeNamesItAndTheTraceGoesOn) {
  const Shape s(DType::kF32, {4});
  auto bad = [](Tensor x) { return x + iota(3, DType::kF32); };
  std::string caught;
  TracedModule m = must(trace_model(NoModel{}, {s}, [&](const NoModel&, std::span<const Tensor> in) {
    try {
      (void)call(bad, in[0]);
    } catch (const TraceError& e) {
      caught = e.what();
    }
    return std::vector<Tensor>{call([](Tensor x) { return x * 3.0; }, in[0])};
  }));
  EXPECT_NE(caught.find("call(fn): add"), std::string::npos) << caught;
  EXPECT_EQ(count_of(m.to_string(), "func.func private"), 1u) << m.to_string();  // the failed one is gone
  EXPECT_EQ(run(m, buffers(must(cpu().buffer(s, std::vector<float>{1, 2, 3, 4}))))[0], (std::vector<float>{3, 6, 9, 12}));
}

}  // namespace
}  // namespace radix
