// Tracing: the emitted module (golden IR checks), the calling convention, and
// trace-time errors that name every shape involved.
#include <gtest/gtest.h>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;

Shape f32(std::initializer_list<int64_t> dims) { return Shape(DType::kF32, dims); }

// Traces body over `inputs` and returns the module text (or the error).
Result<TracedModule> trace_fn(std::vector<Shape> inputs, const CompilationContext::Body& body, size_t n_model = 0) {
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) names.push_back("x" + std::to_string(i));
  return trace(TraceOptions{}, inputs, names, n_model, body);
}

using testing::count_of;

TEST(Trace, GoldenMatmulBiasRelu) {
  auto m = trace_fn({f32({4, 8}), f32({8, 16}), f32({16})}, [](std::span<const Tensor> in) {
    return std::vector<Tensor>{relu(matmul(in[0], in[1]) + in[2])};
  });
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  std::string ir = m->to_string();
  EXPECT_NE(ir.find("func.func @main(%arg0: tensor<4x8xf32>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("%arg1: tensor<8x16xf32>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("-> tensor<4x16xf32>"), std::string::npos) << ir;
  EXPECT_EQ(count_of(ir, "linalg.matmul"), 1u) << ir;
  EXPECT_EQ(count_of(ir, "linalg.fill"), 1u) << ir;
  EXPECT_NE(ir.find("arith.addf"), std::string::npos) << ir;
  EXPECT_NE(ir.find("arith.maximumf"), std::string::npos) << ir;
  EXPECT_NE(ir.find("radix.name = \"x2\""), std::string::npos) << ir;
  // The bias broadcasts through the indexing map, not a materialized copy.
  EXPECT_NE(ir.find("affine_map<(d0, d1) -> (d1)>"), std::string::npos) << ir;
  EXPECT_EQ(m->signature().outputs.size(), 1u);
  EXPECT_EQ(m->signature().outputs[0], f32({4, 16}));
}

TEST(Trace, GoldenOpsEmitUpstreamDialects) {
  auto m = trace_fn({f32({3, 5})}, [](std::span<const Tensor> in) {
    Tensor x = in[0];
    return std::vector<Tensor>{reduce_sum(exp(x), {1}), transpose(x, {1, 0}), reshape(x, {5, 3}),
                               convert(gt(x, scalar(0, DType::kF32)), DType::kI32)};
  });
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  std::string ir = m->to_string();
  for (const char* op : {"math.exp", "\"reduction\"", "tensor.collapse_shape", "tensor.expand_shape",
                         "arith.cmpf ogt", "arith.extui"})
    EXPECT_NE(ir.find(op), std::string::npos) << op << "\n" << ir;
  EXPECT_EQ(m->signature().outputs.size(), 4u);
  EXPECT_EQ(m->signature().outputs[3].dtype(), DType::kI32);
}

struct Lin {
  Tensor w, b;
  template <class V> void visit(V&& v) { v("w", w); v("b", b); }
  Tensor forward(Tensor x) const { return matmul(x, w) + b; }
};

TEST(Trace, ArgumentOrderIsModelThenArgs) {
  Lin model{Tensor::placeholder(f32({3, 2})), Tensor::placeholder(f32({2}))};
  CompileFnOptions opts;
  auto exe = compile_model(cpu(), opts, model, &Lin::forward, f32({5, 3}));
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  const Signature& sig = exe->executable().signature();
  ASSERT_EQ(sig.inputs.size(), 3u);
  EXPECT_EQ(sig.n_model, 2u);
  EXPECT_EQ(sig.input_names, (std::vector<std::string>{"w", "b", "arg0"}));
  EXPECT_EQ(sig.inputs[0], f32({3, 2}));
  EXPECT_EQ(sig.inputs[2], f32({5, 3}));
  EXPECT_EQ(sig.to_string(), "(f32[3,2] w, f32[2] b, f32[5,3] arg0) -> (f32[5,2])");
}

TEST(Trace, DonationBecomesArgumentAttribute) {
  auto m = trace_fn({f32({8}), f32({8})}, [](std::span<const Tensor> in) {
    return std::vector<Tensor>{(in[0] + in[1]).reuse_buffer(in[1])};
  });
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_NE(m->to_string().find("tf.aliasing_output = 0 : i32"), std::string::npos) << m->to_string();
  EXPECT_EQ(m->signature().output_donations, std::vector<int>{1});
}

TEST(Trace, CanonicalizationFoldsIdentities) {
  auto m = trace_fn({f32({4})}, [](std::span<const Tensor> in) {
    return std::vector<Tensor>{transpose(in[0], {0}), convert(in[0], DType::kF32)};
  });
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(count_of(m->to_string(), "linalg.generic"), 0u) << m->to_string();
}

// ------------------------------------------------------------- errors

void expect_trace_error(const Result<TracedModule>& m, std::initializer_list<const char*> needles) {
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kTraceError);
  for (const char* n : needles) EXPECT_NE(m.status().message().find(n), std::string::npos)
      << "missing '" << n << "' in: " << m.status().message();
}

TEST(TraceErrors, MismatchedShapesNameBoth) {
  expect_trace_error(trace_fn({f32({2, 3}), f32({4, 3})},
                              [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0] + in[1]}; }),
                     {"add", "f32[2,3]", "f32[4,3]"});
  expect_trace_error(trace_fn({f32({2, 3}), f32({4, 5})},
                              [](std::span<const Tensor> in) { return std::vector<Tensor>{matmul(in[0], in[1])}; }),
                     {"f32[2,3]", "f32[4,5]", "contracting"});
}

// Regression: a matmul mismatch was reported as dot_general(...), and a bad
// Shape as a bare "radix::Shape: ..." with no op or shapes.
TEST(TraceErrors, ErrorsNameTheOpTheUserCalled) {
  auto message = [](const Result<TracedModule>& m) { return m.ok() ? std::string("(traced)") : m.status().message(); };
  auto mm = trace_fn({f32({2, 3}), f32({4, 5})},
                     [](std::span<const Tensor> in) { return std::vector<Tensor>{matmul(in[0], in[1])}; });
  expect_trace_error(mm, {"matmul(f32[2,3], f32[4,5]", "contracting axes"});
  EXPECT_EQ(message(mm).find("dot_general"), std::string::npos) << message(mm);
  Shape x(DType::kF32, {2, 3}, {"b", "d"}), w(DType::kF32, {4, 5}, {"d", "o"});
  auto d = trace_fn({x, w}, [](std::span<const Tensor> in) { return std::vector<Tensor>{dot(in[0], in[1], "d")}; });
  expect_trace_error(d, {"dot(f32[b=2,d=3], f32[d=4,o=5]", "sizes 3 and 4"});
  EXPECT_EQ(message(d).find("dot_general"), std::string::npos) << message(d);
  expect_trace_error(trace_fn({f32({2, 3}), f32({3, 4})}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{dot_general(in[0], in[1], {{}, {}, {1}, {1}})};
                     }),
                     {"dot_general(f32[2,3], f32[3,4]"});
  // Shapes an op builds from its arguments: the op and operands are named.
  expect_trace_error(trace_fn({f32({4})}, [](std::span<const Tensor> in) {
                       const int64_t huge = int64_t{1} << 40;
                       return std::vector<Tensor>{reshape(in[0], {huge, huge, 0})};
                     }),
                     {"reshape: f32[4]", "overflows"});
  expect_trace_error(trace_fn({f32({4})}, [](std::span<const Tensor>) {
                       return std::vector<Tensor>{iota(-2, DType::kF32)};
                     }),
                     {"iota", "negative length -2"});
  expect_trace_error(trace_fn({Shape(DType::kF32, {2}, {"x"})}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{expand_dims(in[0], 0, "x")};
                     }),
                     {"expand_dims", "f32[x=2]", "'x' used twice"});
  // A Shape the function builds itself: the whole shape is in the message.
  expect_trace_error(trace_fn({Shape(DType::kF32, {2}, {"x"})}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{broadcast_to(in[0], Shape(DType::kF32, {2, 3}, {"x", "x"}))};
                     }),
                     {"invalid Shape built in the traced function", "tag 'x' used twice in tags {'x', 'x'} for f32[2,3]"});
}

// Tag broadcasting keeps the larger operand's axis order whichever side it is on.
TEST(Trace, TagBroadcastTakesTheCoveringOperandsOrder) {
  Shape mask(DType::kBool, {3, 4}, {"s", "t"}), scores(DType::kF32, {2, 5, 3, 4}, {"b", "h", "s", "t"});
  Shape bias(DType::kF32, {4}, {"t"});
  Signature sig;
  auto m = trace_fn({mask, scores, bias}, [](std::span<const Tensor> in) {
    return std::vector<Tensor>{select(in[0], in[1], full(Shape(DType::kF32), -1e9)), in[2] + in[1]};
  });
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->signature().outputs[0], scores);
  EXPECT_EQ(m->signature().outputs[1], scores);
}

TEST(TraceErrors, MismatchedDtypesNameBoth) {
  expect_trace_error(trace_fn({f32({2}), Shape(DType::kF16, {2})},
                              [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0] * in[1]}; }),
                     {"mul", "f32[2]", "f16[2]", "dtype"});
  expect_trace_error(trace_fn({Shape(DType::kI32, {2})},
                              [](std::span<const Tensor> in) { return std::vector<Tensor>{exp(in[0])}; }),
                     {"exp", "i32[2]", "floating-point"});
  expect_trace_error(trace_fn({f32({2}), f32({2}), f32({2})}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{select(in[0], in[1], in[2])};
                     }),
                     {"select", "condition must be bool"});
}

TEST(TraceErrors, UnknownTagsAndAxes) {
  Shape x(DType::kF32, {2, 3}, {"b", "d"});
  expect_trace_error(trace_fn({x}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{reduce_sum(in[0], {"q"})};
                     }),
                     {"reduce_sum", "f32[b=2,d=3]", "'q'"});
  expect_trace_error(trace_fn({x, x}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{dot(in[0], in[1], "z")};
                     }),
                     {"dot", "'z'", "f32[b=2,d=3]"});
  expect_trace_error(trace_fn({x}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{transpose(in[0], {0, 0})};
                     }),
                     {"transpose", "repeats"});
  expect_trace_error(trace_fn({x}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{reshape(in[0], {4, 2})};
                     }),
                     {"reshape", "6 elements", "8 elements"});
  expect_trace_error(trace_fn({x}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{broadcast_to(in[0], Shape(DType::kF32, {2, 4}))};
                     }),
                     {"broadcast_to", "f32[b=2,d=3]", "f32[2,4]"});
}

TEST(TraceErrors, TagAlignedBroadcastConflicts) {
  Shape a(DType::kF32, {2, 3}, {"b", "d"}), b(DType::kF32, {4}, {"d"});
  expect_trace_error(trace_fn({a, b}, [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0] + in[1]}; }),
                     {"axis 'd' has sizes 3 and 4", "f32[b=2,d=3]", "f32[d=4]"});
}

TEST(TraceErrors, OpsOutsideTracingThrowAtOnce) {
  Tensor p = Tensor::placeholder(f32({2}));
  EXPECT_THROW(scalar(1.0, DType::kF32), TraceError);
  try {
    (void)(p + p);
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("no active CompilationContext"), std::string::npos) << e.what();
  }
}

TEST(TraceErrors, PlaceholdersAndForeignTensorsAreRejected) {
  Tensor p = Tensor::placeholder(f32({2}));
  expect_trace_error(trace_fn({f32({2})}, [&](std::span<const Tensor> in) { return std::vector<Tensor>{in[0] + p}; }),
                     {"placeholder"});
  Tensor leaked;
  ASSERT_TRUE(trace_fn({f32({2})}, [&](std::span<const Tensor> in) {
                leaked = in[0];
                return std::vector<Tensor>{in[0]};
              }).ok());
  expect_trace_error(trace_fn({f32({2})}, [&](std::span<const Tensor> in) {
                       return std::vector<Tensor>{in[0] + leaked};
                     }),
                     {"another trace"});
}

// Regression: traces used to be told apart by the context's address, so a
// tensor kept from a finished trace passed the check when a new context took
// the same address, and then crashed. Both contexts here live in one storage.
TEST(TraceErrors, TensorOfAFinishedTraceIsForeignEvenAtTheSameAddress) {
  alignas(CompilationContext) unsigned char storage[sizeof(CompilationContext)];
  Tensor kept;
  std::vector<Shape> in = {f32({4})};
  std::vector<std::string> names = {"x"};
  auto* first = new (storage) CompilationContext();
  ASSERT_TRUE(first->emit_main(in, names, 0, [&](std::span<const Tensor> a) {
    kept = a[0] * 2.0;
    return std::vector<Tensor>{kept};
  }, nullptr).ok());
  const uint64_t first_trace = first->trace_id();
  first->~CompilationContext();

  auto* second = new (storage) CompilationContext();
  EXPECT_EQ(static_cast<void*>(second), static_cast<void*>(first));
  auto expect_foreign = [&](const CompilationContext::Body& body, const char* what) {
    Status s = second->emit_main(in, names, 0, body, nullptr);
    ASSERT_FALSE(s.ok()) << what;
    EXPECT_EQ(s.code(), ErrorCode::kTraceError) << what;
    EXPECT_NE(s.message().find("another trace"), std::string::npos) << what << ": " << s.message();
  };
  expect_foreign([&](std::span<const Tensor> a) { return std::vector<Tensor>{a[0] + kept}; }, "operand");
  expect_foreign([&](std::span<const Tensor> a) { return std::vector<Tensor>{exp(kept)}; }, "unary operand");
  expect_foreign([&](std::span<const Tensor>) { return std::vector<Tensor>{kept}; }, "result");
  EXPECT_NE(second->trace_id(), first_trace);
  second->~CompilationContext();
}

// One context, two functions: tensors of the first are foreign in the second.
TEST(TraceErrors, TensorOfAnEarlierFunctionInTheSameContextIsForeign) {
  CompilationContext ctx;
  Tensor kept;
  std::vector<Shape> in = {f32({4})};
  std::vector<std::string> names = {"x"};
  ASSERT_TRUE(ctx.emit_main(in, names, 0, [&](std::span<const Tensor> a) {
    kept = a[0];
    return std::vector<Tensor>{a[0] + 1.0};
  }, nullptr).ok());
  Status s = ctx.emit_main(in, names, 0, [&](std::span<const Tensor> a) {
    return std::vector<Tensor>{(a[0] + 1.0).reuse_buffer(kept)};
  }, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("different traces"), std::string::npos) << s.message();
}

TEST(TraceErrors, CompileFnReturnsTheTraceErrorAsStatus) {
  auto exe = compile_fn(cpu(), [](Tensor a, Tensor b) { return a - b; }, f32({3}), f32({4}));
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), ErrorCode::kTraceError);
  EXPECT_NE(exe.status().message().find("f32[3]"), std::string::npos);
  EXPECT_NE(exe.status().message().find("f32[4]"), std::string::npos);
}

TEST(TraceErrors, DonationMisuse) {
  expect_trace_error(trace_fn({f32({8})}, [](std::span<const Tensor> in) {
                       Tensor t = in[0] * 2.0;
                       return std::vector<Tensor>{(in[0] + 1.0).reuse_buffer(t)};
                     }),
                     {"reuse_buffer", "not a function argument"});
  expect_trace_error(trace_fn({f32({8})}, [](std::span<const Tensor> in) {
                       return std::vector<Tensor>{(in[0] + 1.0).reuse_buffer(in[0]), (in[0] * 2.0).reuse_buffer(in[0])};
                     }),
                     {"donated to two results"});
}

TEST(CompilationContext, ActivationsNest) {
  EXPECT_EQ(CompilationContext::current(), nullptr);
  CompilationContext a, b;
  {
    CompilationContext::Activation act_a(a);
    EXPECT_EQ(CompilationContext::current(), &a);
    {
      CompilationContext::Activation act_b(b);
      EXPECT_EQ(CompilationContext::current(), &b);
    }
    EXPECT_EQ(CompilationContext::current(), &a);
  }
  EXPECT_EQ(CompilationContext::current(), nullptr);
}

}  // namespace
}  // namespace radix
