// Sharded programs under MPI: ctest starts this binary with `mpirun -np 2`
// and `-np 4` (tests/CMakeLists.txt). Every rank runs every test; each
// compares its gathered result with a naive loop over the whole arrays, so
// a wrong shard, a missing all-reduce or a misplaced gather fails on every
// rank. `--die-before-collective` instead makes rank 1 exit while the others
// wait in an all-reduce: the job must end with an error, not hang.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "radix/io/weight_store.h"
#include "radix/models/llama/generator.h"
#include "radix/radix.h"

namespace radix {
namespace {

constexpr float kTol = 1e-4f;  // f32 sums of up to 64 products, reordered across ranks

std::vector<float> seeded(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * 0.37f + phase);
  return v;
}

// y[b, o] = sum_d x[b, d] w[d, o] (+ bias, relu).
std::vector<float> ref_linear(const std::vector<float>& x, const std::vector<float>& w, int64_t B, int64_t D,
                              int64_t O, const std::vector<float>* bias, bool relu_out) {
  std::vector<float> y(static_cast<size_t>(B * O));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < O; ++o) {
      double s = bias ? (*bias)[static_cast<size_t>(o)] : 0.0;
      for (int64_t d = 0; d < D; ++d) s += double(x[static_cast<size_t>(b * D + d)]) * w[static_cast<size_t>(d * O + o)];
      y[static_cast<size_t>(b * O + o)] = relu_out ? std::max(0.0f, static_cast<float>(s)) : static_cast<float>(s);
    }
  return y;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], kTol) << "element " << i;
}

Mesh line_mesh() { return Mesh({{"x", distributed::size()}}); }

// Data parallel: the batch split, the weights replicated; the result once
// left split (gathered on the host) and once replicated (gathered inside
// the program: an all-gather).
TEST(Sharded, DataParallelLinear) {
  const Mesh mesh = line_mesh();
  const int64_t B = 8, D = 16, O = 12;
  auto x = seeded(B * D, 0.1f), w = seeded(D * O, 0.7f), bias = seeded(O, 1.3f);
  const auto want = ref_linear(x, w, B, D, O, &bias, true);
  Platform p = Platform::cpu();
  const Shape xs = Shape(DType::kF32, {B, D}, {"b", "d"}).with_partition("b", "x");
  const Shape ws(DType::kF32, {D, O}, {"d", "o"}), bs(DType::kF32, {O}, {"o"});
  for (bool replicated_out : {false, true}) {
    CompileFnOptions opts;
    opts.trace.mesh = mesh;
    auto exe = compile_fn(
        p, opts,
        [replicated_out](Tensor a, Tensor wt, Tensor bt) {
          Tensor y = relu(dot(a, wt, "d") + bt);
          return replicated_out ? y : shard(y, {{"b", "x"}});
        },
        xs, ws, bs);
    ASSERT_TRUE(exe.ok()) << exe.status().to_string();
    auto xb = upload_shard(p, mesh, xs, std::span<const float>(x));
    auto wb = upload_shard(p, mesh, ws, std::span<const float>(w));
    auto bb = upload_shard(p, mesh, bs, std::span<const float>(bias));
    ASSERT_TRUE(xb.ok() && wb.ok() && bb.ok());
    EXPECT_EQ(xb->shape().dim(0), B / mesh.num_devices());
    auto y = exe->call(*xb, *wb, *bb);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    if (replicated_out) {
      EXPECT_EQ(y->shape().dim(0), B);
      expect_near_all(y->to_host<float>().value(), want);
    } else {
      EXPECT_EQ(y->shape().dim(0), B / mesh.num_devices());
      auto all = gather_shards<float>(*y, mesh);
      ASSERT_TRUE(all.ok()) << all.status().to_string();
      expect_near_all(*all, want);
    }
  }
}

// Tensor parallel: the contracting axis split on both operands; each rank
// multiplies its slice and an all-reduce sums the partial products.
TEST(Sharded, TensorParallelContraction) {
  const Mesh mesh = line_mesh();
  const int64_t B = 4, D = 32, O = 6;
  auto x = seeded(B * D, 0.2f), w = seeded(D * O, 0.9f);
  const auto want = ref_linear(x, w, B, D, O, nullptr, false);
  Platform p = Platform::cpu();
  const Shape xs = Shape(DType::kF32, {B, D}, {"b", "d"}).with_partition("d", "x");
  const Shape ws = Shape(DType::kF32, {D, O}, {"d", "o"}).with_partition("d", "x");
  CompileFnOptions opts;
  opts.trace.mesh = mesh;
  opts.compile.diagnostics.dump = {"collectives"};
  opts.compile.diagnostics.dump_dir = ::testing::TempDir() + "radix-sharded-" + std::to_string(distributed::rank());
  auto exe = compile_fn(p, opts, [](Tensor a, Tensor wt) { return dot(a, wt, "d"); }, xs, ws);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  auto y = exe->call(upload_shard(p, mesh, xs, std::span<const float>(x)).value(),
                     upload_shard(p, mesh, ws, std::span<const float>(w)).value());
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  expect_near_all(y->to_host<float>().value(), want);
}

// Megatron's MLP: the hidden axis split (w1 by columns, w2 by rows), so the
// first product needs no communication and the second ends in one
// all-reduce. On 4 ranks, a 2 x 2 mesh also splits the batch.
TEST(Sharded, MegatronMlp) {
  const int n = distributed::size();
  const Mesh mesh = n == 4 ? Mesh({{"data", 2}, {"model", 2}}) : Mesh({{"data", 1}, {"model", n}});
  const int64_t B = 4, D = 8, H = 16, O = 8;
  auto x = seeded(B * D, 0.3f), w1 = seeded(D * H, 1.1f), w2 = seeded(H * O, 2.1f);
  auto h = ref_linear(x, w1, B, D, H, nullptr, true);
  const auto want = ref_linear(h, w2, B, H, O, nullptr, false);
  Platform p = Platform::cpu();
  const Shape xs = Shape(DType::kF32, {B, D}, {"b", "d"}).with_partition("b", "data");
  const Shape w1s = Shape(DType::kF32, {D, H}, {"d", "h"}).with_partition("h", "model");
  const Shape w2s = Shape(DType::kF32, {H, O}, {"h", "o"}).with_partition("h", "model");
  CompileFnOptions opts;
  opts.trace.mesh = mesh;
  auto exe = compile_fn(
      p, opts,
      [](Tensor a, Tensor u, Tensor v) { return shard(dot(relu(dot(a, u, "d")), v, "h"), {{"b", "data"}}); }, xs,
      w1s, w2s);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  auto y = exe->call(upload_shard(p, mesh, xs, std::span<const float>(x)).value(),
                     upload_shard(p, mesh, w1s, std::span<const float>(w1)).value(),
                     upload_shard(p, mesh, w2s, std::span<const float>(w2)).value());
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  auto all = gather_shards<float>(*y, mesh);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  expect_near_all(*all, want);
}

// The function cache's layers inside an automatically partitioned program
// (the partition stage inlines them: the partitioner works in one function).
Tensor sharded_layer(Tensor x, Tensor w) { return relu(dot(x, w, "d")).with_tags({"b", "d"}); }

TEST(Sharded, CalledLayersArePartitioned) {
  const Mesh mesh = line_mesh();
  const int64_t B = 8, D = 16;
  auto x = seeded(B * D, 0.5f), w = seeded(D * D, 1.9f);
  const auto want = ref_linear(ref_linear(x, w, B, D, D, nullptr, true), w, B, D, D, nullptr, true);
  Platform p = Platform::cpu();
  const Shape xs = Shape(DType::kF32, {B, D}, {"b", "d"}).with_partition("b", "x");
  const Shape ws(DType::kF32, {D, D}, {"d", "o"});
  CompileFnOptions opts;
  opts.trace.mesh = mesh;
  auto exe = compile_fn(
      p, opts,
      [](Tensor a, Tensor wt) { return call("layer", &sharded_layer, call("layer", &sharded_layer, a, wt), wt); },
      xs, ws);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  auto y = exe->call(upload_shard(p, mesh, xs, std::span<const float>(x)).value(),
                     upload_shard(p, mesh, ws, std::span<const float>(w)).value());
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  expect_near_all(y->to_host<float>().value(), want);
}

// Resharding from one split axis to another needs an all-to-all, which
// Radix does not lower: a compile error naming it, on every rank.
TEST(Sharded, UnsupportedPartitioningFailsAtCompileTime) {
  const Mesh mesh = line_mesh();
  if (mesh.single_device()) GTEST_SKIP() << "needs more than one rank";
  Platform p = Platform::cpu();
  CompileFnOptions opts;
  opts.trace.mesh = mesh;
  const Shape xs = Shape(DType::kF32, {8, 8}, {"r", "c"}).with_partition("r", "x");
  auto exe = compile_fn(p, opts, [](Tensor a) { return shard(a * 2.0f, {{"c", "x"}}); }, xs);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("shard.all_to_all"), std::string::npos) << exe.status().to_string();
  // An op without sharding rules (a loop): the error names it and the way out.
  auto loop = compile_fn(
      p, opts, [](Tensor a) { return for_loop(0, 3, [](Tensor, Tensor s) { return s * 2.0f; }, a); }, xs);
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.status().message().find("scf.for"), std::string::npos) << loop.status().to_string();
  EXPECT_NE(loop.status().message().find("kManual"), std::string::npos) << loop.status().to_string();
}

// The job's size must be the mesh's: a clear error, not a hang in MPI.
TEST(Sharded, MeshLargerThanTheJobIsRefused) {
  Platform p = Platform::cpu();
  CompileFnOptions opts;
  const int n = distributed::size();
  opts.trace.mesh = Mesh({{"x", 2 * n}});
  auto exe = compile_fn(p, opts, [](Tensor a) { return a + a; },
                        Shape(DType::kF32, {8 * n}, {"i"}).with_partition("i", "x"));
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("mpirun -np " + std::to_string(2 * n)), std::string::npos)
      << exe.status().to_string();
}

// Tracing errors name the shape and the mesh at once.
TEST(Sharded, BadPartitionsFailWhileTracing) {
  Platform p = Platform::cpu();
  CompileFnOptions opts;
  opts.trace.mesh = Mesh({{"x", 2}});
  auto uneven = compile_fn(p, opts, [](Tensor a) { return a; },
                           Shape(DType::kF32, {5}, {"i"}).with_partition("i", "x"));
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.status().message().find("does not split evenly"), std::string::npos) << uneven.status().to_string();
  auto unknown = compile_fn(p, opts, [](Tensor a) { return shard(a, {{"i", "model"}}); },
                            Shape(DType::kF32, {4}, {"i"}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'model'"), std::string::npos) << unknown.status().to_string();
}

// One device's program with an explicit all-reduce (manual partitioning):
// every rank holds a slice of the contracting axis and sums the partial
// products; the result on every rank is the whole product.
TEST(Sharded, ManualAllReduce) {
  const int n = distributed::size(), r = distributed::rank();
  const int64_t B = 3, D = 8 * n, O = 5, d = D / n;
  auto x = seeded(B * D, 0.4f), w = seeded(D * O, 1.7f);
  const auto want = ref_linear(x, w, B, D, O, nullptr, false);
  std::vector<float> xs(static_cast<size_t>(B * d)), ws(static_cast<size_t>(d * O));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < d; ++k) xs[static_cast<size_t>(b * d + k)] = x[static_cast<size_t>(b * D + r * d + k)];
  for (int64_t k = 0; k < d; ++k)
    for (int64_t o = 0; o < O; ++o) ws[static_cast<size_t>(k * O + o)] = w[static_cast<size_t>((r * d + k) * O + o)];
  Platform p = Platform::cpu();
  CompileFnOptions opts;
  opts.trace.mesh = Mesh({{"model", n}});
  opts.trace.partitioning = TraceOptions::Partitioning::kManual;
  const Shape xsh(DType::kF32, {B, d}, {"b", "d"}), wsh(DType::kF32, {d, O}, {"d", "o"});
  auto exe = compile_fn(p, opts, [](Tensor a, Tensor b) { return all_reduce(dot(a, b, "d"), "model"); }, xsh, wsh);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  auto y = exe->call(p.buffer(xsh, xs).value(), p.buffer(wsh, ws).value());
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  expect_near_all(y->to_host<float>().value(), want);
  // A max over ranks: each contributes its rank.
  auto mx = compile_fn(p, opts, [](Tensor a) { return all_reduce(a, "model", CollectiveReduction::kMax); },
                       Shape(DType::kI32, {2}));
  ASSERT_TRUE(mx.ok()) << mx.status().to_string();
  auto m = mx->call(p.buffer(Shape(DType::kI32, {2}), std::vector<int32_t>{r, -r}).value());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->to_host<int32_t>().value(), (std::vector<int32_t>{n - 1, 0}));
}

// A custom call inside one device's program: each rank's handler squares
// its shard, then the shards' sums are all-reduced.
TEST(Sharded, CustomCallInsideASplitProgram) {
  static const bool registered = ffi::register_handler("sharded.square", [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
    const float* x = static_cast<const float*>(f->args.args[0]->data);
    float* y = static_cast<float*>(f->rets.rets[0]->data);
    for (int64_t i = 0; i < radix_ffi_buffer_count(f->args.args[0]); ++i) y[i] = x[i] * x[i];
    return nullptr;
  }).ok();
  ASSERT_TRUE(registered);
  const int n = distributed::size(), r = distributed::rank();
  Platform p = Platform::cpu();
  CompileFnOptions opts;
  opts.trace.mesh = Mesh({{"model", n}});
  opts.trace.partitioning = TraceOptions::Partitioning::kManual;
  const Shape s(DType::kF32, {3});
  auto exe = compile_fn(p, opts, [](Tensor a) {
    return all_reduce(custom_call("sharded.square", {a}, {a.shape()})[0], "model");
  }, s);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  // Rank k holds {k, k + 1, k + 2}; the sum of squares over ranks, per slot.
  auto y = exe->call(p.buffer(s, std::vector<float>{float(r), float(r + 1), float(r + 2)}).value());
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  std::vector<float> want(3, 0.f);
  for (int k = 0; k < n; ++k)
    for (int i = 0; i < 3; ++i) want[static_cast<size_t>(i)] += float((k + i) * (k + i));
  expect_near_all(y->to_host<float>().value(), want);
}

TEST(Sharded, AllReduceOnlyInManualPrograms) {
  Platform p = Platform::cpu();
  CompileFnOptions opts;
  opts.trace.mesh = Mesh({{"model", 2}});
  auto exe = compile_fn(p, opts, [](Tensor a) { return all_reduce(a, "model"); }, Shape(DType::kF32, {4}));
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("kManual"), std::string::npos) << exe.status().to_string();
  opts.trace.partitioning = TraceOptions::Partitioning::kManual;
  auto bf16 = compile_fn(p, opts, [](Tensor a) { return all_reduce(a, "model"); }, Shape(DType::kBF16, {4}));
  ASSERT_FALSE(bf16.ok());
  EXPECT_NE(bf16.status().message().find("f32, f64, i32 or i64"), std::string::npos) << bf16.status().to_string();
}

// The tensor-parallel Llama's logits match one process's, step by step.
TEST(Sharded, TensorParallelLlamaLogits) {
  const int n = distributed::size();
  auto store = io::open_weights(std::string(RADIX_SOURCE_DIR) + "/models/stories260K/stories260K.bin");
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  Platform p = Platform::cpu();
  models::LlamaGenerator::Options whole, split;
  split.tensor_parallel = n;
  auto one = models::LlamaGenerator::load(p, **store, whole);
  auto tp = models::LlamaGenerator::load(p, **store, split);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  ASSERT_TRUE(tp.ok()) << tp.status().to_string();
  EXPECT_EQ((*tp)->config().tensor_parallel, n);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  for (std::vector<int32_t> step : {prompt, std::vector<int32_t>{290}, std::vector<int32_t>{300}}) {
    auto a = (*one)->forward(step);
    auto b = (*tp)->forward(step);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->size(), b->size());
    for (size_t i = 0; i < a->size(); ++i) ASSERT_NEAR((*a)[i], (*b)[i], 1e-4f) << "logit " << i;
  }
}

}  // namespace
}  // namespace radix

int main(int argc, char** argv) {
  using namespace radix;
  if (argc > 1 && std::strcmp(argv[1], "--die-before-collective") == 0) {
    // Rank 1 dies; the others block in an all-reduce it never joins.
    const Mesh mesh({{"x", distributed::size()}});
    Platform p = Platform::cpu();
    CompileFnOptions opts;
    opts.trace.mesh = mesh;
    const Shape s = Shape(DType::kF32, {4, 8}, {"b", "d"}).with_partition("d", "x");
    auto exe = compile_fn(p, opts, [](Tensor a) { return reduce_sum(a, {"d"}); }, s);
    if (!exe.ok()) return 2;
    std::vector<float> x(32, 1.0f);
    auto xb = upload_shard(p, mesh, s, std::span<const float>(x));
    if (distributed::rank() == 1) {
      std::fprintf(stderr, "rank 1 exits now\n");
      std::_Exit(3);
    }
    std::fprintf(stderr, "rank %d waits in the all-reduce\n", distributed::rank());
    auto y = exe->call(*xb);
    return 0;  // not reached on a healthy MPI: the job is aborted
  }
  ::testing::InitGoogleTest(&argc, argv);
  // Only rank 0 prints gtest's report; every rank's failures still fail the job.
  if (distributed::rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}
