// Control flow: loops whose trip count depends on run-time data, branches on
// run-time predicates, counted loops over structured state, and errors inside
// bodies. References are plain C++ loops (exact).
#include <gtest/gtest.h>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

template <class T> struct Acc {
  T total, step;
  template <class V> void visit(V&& v) { v("total", total); v("step", step); }
};

TEST(ControlFlow, WhileLoopTripCountFromData) {
  // Doubles x until its sum passes a run-time limit; counts the steps.
  const Shape xs(DType::kF32, {5}), ls(DType::kF32);
  for (const VectorIsa isa : {VectorIsa{4, 16}, VectorIsa{16, 32}, VectorIsa{}}) {
    CompileFnOptions o;
    o.compile.codegen.cpu.schedule_isa = isa;
    auto exe = must(compile_fn(cpu(), o, [](Tensor x, Tensor limit) {
      auto [n, y] = while_loop([&](auto s) { return lt(reduce_sum(std::get<1>(s)), limit); },
                               [](auto s) { return std::make_tuple(std::get<0>(s) + 1.0, std::get<1>(s) * 2.0); },
                               std::make_tuple(scalar(0, DType::kI32), x));
      return std::make_tuple(n, y);
    }, xs, ls));
    for (float limit : {0.5f, 10.f, 1000.f, 1e6f}) {
      std::vector<float> x = {0.5f, 1, 0.25f, 0, 1.25f};
      auto [n, y] = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().scalar(limit))));
      int steps = 0;
      std::vector<float> want = x;
      auto sum = [&] { float s = 0; for (float v : want) s += v; return s; };
      while (sum() < limit) {
        for (float& v : want) v *= 2;
        ++steps;
      }
      EXPECT_EQ(must(n.to_host<int32_t>())[0], steps) << limit;
      EXPECT_EQ(must(y.to_host<float>()), want) << limit;
    }
  }
}

TEST(ControlFlow, CondOnRunTimePredicate) {
  const Shape xs(DType::kF32, {4});
  auto exe = must(compile_fn(cpu(), [](Tensor x, Tensor flag) {
    return cond(gt(flag, scalar(0, DType::kI32)),
                [](Tensor v) { return v * 3.0; },
                [](Tensor v) { return -v + 1.0; }, x);
  }, xs, Shape(DType::kI32)));
  std::vector<float> x = {1, -2, 3.5f, 0};
  for (int32_t f : {1, 0, -5}) {
    std::vector<float> want;
    for (float v : x) want.push_back(f > 0 ? v * 3 : -v + 1);
    EXPECT_EQ(must(must(exe.call(must(cpu().buffer(xs, x)), must(cpu().scalar(f)))).to_host<float>()), want) << f;
  }
}

TEST(ControlFlow, ForLoopOverAStructWithTheIndex) {
  // total += step * i; step += 1, for i in [2, 7): a model-style struct state.
  const Shape s(DType::kI64, {3});
  auto exe = must(compile_fn(cpu(), [](Tensor total, Tensor step) {
    Acc<Tensor> out = for_loop(2, 7, [](const Tensor& i, Acc<Tensor> a) {
      return Acc<Tensor>{a.total + a.step * i, a.step + 1.0};
    }, Acc<Tensor>{total, step});
    return std::make_tuple(out.total, out.step);
  }, s, s));
  std::vector<int64_t> t = {0, 10, -4}, st = {1, 2, 3};
  auto [tot, stp] = must(exe.call(must(cpu().buffer(s, t)), must(cpu().buffer(s, st))));
  std::vector<int64_t> wt = t, ws = st;
  for (int64_t i = 2; i < 7; ++i)
    for (size_t k = 0; k < 3; ++k) {
      wt[k] += ws[k] * i;
      ws[k] += 1;
    }
  EXPECT_EQ(must(tot.to_host<int64_t>()), wt);
  EXPECT_EQ(must(stp.to_host<int64_t>()), ws);
}

TEST(ControlFlow, BodyErrorsNameTheBodyAndLeaveTheTraceUsable) {
  const Shape xs(DType::kF32, {4});
  auto bad_state = compile_fn(cpu(), [](Tensor x) {
    return while_loop([](Tensor s) { return lt(reduce_sum(s), scalar(10, DType::kF32)); },
                      [](Tensor s) { return concatenate({s, s}, 0); }, x);
  }, xs);
  ASSERT_FALSE(bad_state.ok());
  EXPECT_NE(bad_state.status().message().find("while_loop body: returns (f32[8]) unlike the state it takes (f32[4])"),
            std::string::npos) << bad_state.status().message();
  auto bad_pred = compile_fn(cpu(), [](Tensor x) {
    return while_loop([](Tensor s) { return s; }, [](Tensor s) { return s; }, x);
  }, xs);
  ASSERT_FALSE(bad_pred.ok());
  EXPECT_NE(bad_pred.status().message().find("while_loop cond: the condition must be a rank-0 bool tensor, got f32[4]"),
            std::string::npos) << bad_pred.status().message();
  auto bad_branch = compile_fn(cpu(), [](Tensor x) {
    return cond(scalar(1, DType::kBool), [](Tensor v) { return v; }, [](Tensor v) { return reduce_sum(v); }, x);
  }, xs);
  ASSERT_FALSE(bad_branch.ok());
  EXPECT_NE(bad_branch.status().message().find("cond else-branch: returns (f32[]) unlike the then-branch's (f32[4])"),
            std::string::npos) << bad_branch.status().message();
  // An op error inside a branch names the branch; caught, the trace goes on.
  auto recovered = compile_fn(cpu(), [](Tensor x) {
    try {
      (void)cond(scalar(1, DType::kBool), [](Tensor v) { return v + concatenate({v, v}, 0); }, [](Tensor v) { return v; }, x);
      ADD_FAILURE() << "expected a TraceError";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("cond then-branch: add: cannot broadcast f32[4], f32[8]"), std::string::npos) << e.what();
    }
    return x * 2.0;
  }, xs);
  ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
  std::vector<float> x = {1, 2, 3, 4};
  EXPECT_EQ(must(must(recovered->call(must(cpu().buffer(xs, x)))).to_host<float>()), (std::vector<float>{2, 4, 6, 8}));
}

}  // namespace
}  // namespace radix
