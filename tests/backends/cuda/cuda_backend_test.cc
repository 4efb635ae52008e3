// The CUDA backend. Without a GPU (these machines, CI): the clear errors, and
// compiling without a device (PTX written, assembled by ptxas). With one
// (RADIX_CUDA tests run when Platform::cuda() opens a device; otherwise they
// skip, saying why): programs against the CPU's results, donation, the
// executable cache, pinned outputs, custom calls with the device stream, the
// MLP example and stories260K greedy text.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "radix/radix.h"
#include "radix/runtime/backend.h"
#include "radix/runtime/ffi_registry.h"
#include "radix/tokenizer/tokenizer.h"
#include "test_util.h"
#include "models/stories.h"

namespace radix {
namespace {

using testing::all_close;
using testing::cpu;
using testing::must;

const Shape kA(DType::kF32, {37, 70}, {"m", "k"});
const Shape kB(DType::kF32, {70, 45}, {"k", "n"});

// The device, or why there is none.
Result<Platform> device() { return Platform::cuda(); }

#define REQUIRE_DEVICE()                                                        \
  auto dev_or = device();                                                       \
  if (!dev_or.ok()) GTEST_SKIP() << "no GPU here: " << dev_or.status().message(); \
  Platform gpu = std::move(dev_or).value()

// A new empty folder under the test temp dir, removed when the process exits.
std::string fresh_dir(const std::string& tag) {
  struct Cleanup {
    std::vector<std::string> dirs;
    ~Cleanup() {
      for (const std::string& d : dirs) std::filesystem::remove_all(d);
    }
  };
  static Cleanup cleanup;
  std::string d = ::testing::TempDir() + "radix_cuda_" + tag + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  cleanup.dirs.push_back(d);
  return d;
}

std::vector<std::filesystem::path> ptx_files(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().extension() == ".ptx") out.push_back(e.path());
  return out;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

Tensor program(Tensor a, Tensor b) { return relu(dot(a, b, "k")) + 1.0f; }

TEST(CudaBackend, WithoutADeviceEveryRunningApiSaysSo) {
  if (device().ok()) GTEST_SKIP() << "a GPU is present: the no-device errors are not reachable";
  auto got = Platform::get("cuda");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(got.status().message().find("no CUDA device"), std::string::npos) << got.status().to_string();
  // The backend exists for compiling; running anything on it is the same error.
  Platform p = must(Platform::for_compiling("cuda"));
  EXPECT_EQ(p.name(), "cuda");
  auto exe = compile_fn(p, program, kA, kB);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("no CUDA device"), std::string::npos) << exe.status().to_string();
  auto buf = p.buffer(Shape(DType::kF32, {2}), std::vector<float>{1, 2});
  ASSERT_FALSE(buf.ok());
  EXPECT_NE(buf.status().message().find("no CUDA device"), std::string::npos) << buf.status().to_string();
  // The CPU is untouched by it.
  EXPECT_TRUE(Platform::get("cpu").ok());
}

TEST(CudaBackend, CompileOnlyWritesEachKernelsPtxForTheTarget) {
  Platform p = must(Platform::for_compiling("cuda"));
  for (const char* target : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(target);
    CompileFnOptions o;
    o.compile.codegen.cuda.target = target;
    o.compile.diagnostics.dump = {"ptx"};
    o.compile.diagnostics.dump_dir = fresh_dir(target);
    TracedModule m = must(trace_fn(o, program, kA, kB));
    CompileStats st = must(p.compile_only(m, o.compile));
    ASSERT_FALSE(st.dump_folder.empty());
    std::vector<std::filesystem::path> files = ptx_files(st.dump_folder);
    // zero-fill, matmul, relu + 1 (fused): at least two kernels.
    ASSERT_GE(files.size(), 2u);
    for (const auto& f : files) {
      const std::string ptx = read(f);
      EXPECT_NE(ptx.find(std::string(".target ") + target), std::string::npos) << f;
      EXPECT_NE(ptx.find(".entry"), std::string::npos) << f;
    }
  }
}

TEST(CudaBackend, PtxIsAcceptedByPtxas) {
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (!std::filesystem::exists(ptxas)) GTEST_SKIP() << "no CUDA toolkit ptxas at " << ptxas;
  Platform p = must(Platform::for_compiling("cuda"));
  CompileFnOptions o;
  o.compile.diagnostics.dump = {"ptx"};
  o.compile.diagnostics.dump_dir = fresh_dir("ptxas");
  // A softmax (reductions), a gather-free loop body and the product.
  auto fn = [](Tensor a, Tensor b) -> Tensor { return softmax(program(a, b), "n"); };
  TracedModule m = must(trace_fn(o, fn, kA, kB));
  CompileStats st = must(p.compile_only(m, o.compile));
  for (const auto& f : ptx_files(st.dump_folder)) {
    const std::string cmd = std::string(ptxas) + " -arch=sm_90 '" + f.string() + "' -o /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

TEST(CudaBackend, OptionsAreChecked) {
  Platform p = must(Platform::for_compiling("cuda"));
  CompileOptions bad;
  bad.codegen.cuda.target = "sm_9x";
  TracedModule m = must(trace_fn(CompileFnOptions{}, program, kA, kB));
  auto st = p.compile_only(m, bad);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.status().message().find("sm_9x"), std::string::npos) << st.status().to_string();
  CompileOptions dump;
  dump.diagnostics.dump = {"schedule"};  // a CPU stage
  auto d = p.compile_only(m, dump);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("gpu-map"), std::string::npos) << "lists the CUDA stages: " << d.status().to_string();
  // The target is part of the executable-cache key.
  CompileOptions a, b;
  a.codegen.cuda.target = "sm_80";
  b.codegen.cuda.target = "sm_90";
  EXPECT_NE(must(p.cache_key(m, a)), must(p.cache_key(m, b)));
}

TEST(CudaBackend, ShardedProgramsAreRefusedByName) {
  Platform p = must(Platform::for_compiling("cuda"));
  CompileFnOptions o;
  o.trace.mesh = Mesh({{"x", 2}});
  auto m = trace_fn(o, [](Tensor a) -> Tensor { return a * 2.0f; },
                    Shape(DType::kF32, {8, 4}, {"b", "d"}).with_partition("b", "x"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  auto st = p.compile_only(*m, o.compile);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("CPU backend over MPI"), std::string::npos) << st.status().to_string();
}

// Runs the CPU backend, but compiles every program for CUDA too (compile
// only) and keeps its PTX: what a model's programs become on the GPU,
// checked on a machine without one.
class CpuAlsoCompilingForCuda : public Backend {
 public:
  explicit CpuAlsoCompilingForCuda(std::string dir) : dir_(std::move(dir)) {}
  std::shared_ptr<Backend> cpu_ = Platform::cpu().backend();
  std::shared_ptr<Backend> cuda_ = must(Platform::for_compiling("cuda")).backend();
  std::vector<std::string> folders;
  std::vector<Status> failures;
  std::string name() const override { return "cpu"; }
  Status check_options(const CompileOptions& o) const override { return cpu_->check_options(o); }
  std::string codegen_fingerprint(const CompileOptions& o) const override { return cpu_->codegen_fingerprint(o); }
  Result<std::unique_ptr<BackendExecutable>> compile(const CompileJob& job) override {
    CompileOptions co = *job.options;
    co.cache_dir.clear();
    co.diagnostics.dump = {"ptx"};
    CompileJob j = job;
    j.options = &co;
    j.dump_folder = dir_ + "/" + job.name;
    auto st = cuda_->compile_only(j);
    if (st.ok()) folders.push_back(j.dump_folder);
    else failures.push_back(st.status());
    return cpu_->compile(job);
  }
  Result<std::unique_ptr<BackendExecutable>> load(std::string_view b, const CompileJob& j) override { return cpu_->load(b, j); }
  Result<void*> allocate(size_t n, MemoryKind k) override { return cpu_->allocate(n, k); }
  void deallocate(void* p, size_t n, MemoryKind k) override { cpu_->deallocate(p, n, k); }
  Status copy_to_device(void* d, const void* s, size_t n) override { return cpu_->copy_to_device(d, s, n); }
  Status copy_to_host(void* d, const void* s, size_t n) override { return cpu_->copy_to_host(d, s, n); }
  Status copy_on_device(void* d, const void* s, size_t n) override { return cpu_->copy_on_device(d, s, n); }

 private:
  std::string dir_;
};

TEST(CudaBackend, LlamaProgramsCompileToPtxThatPtxasAccepts) {
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (!std::filesystem::exists(ptxas)) GTEST_SKIP() << "no CUDA toolkit ptxas at " << ptxas;
  auto both = std::make_shared<CpuAlsoCompilingForCuda>(fresh_dir("llama"));
  Platform p(both);
  auto store = must(io::open_weights(testing::kModel));
  models::LlamaGenerator::Options o;  // no executable cache: every program compiles
  auto gen = must(models::LlamaGenerator::load(p, *store, o));
  models::GenerateOptions g;
  g.temperature = 0;
  g.steps = 8;
  const std::vector<int32_t> prompt = {1, 300, 301};
  (void)must(gen->generate(prompt, g, [](int32_t) { return true; }));
  for (const Status& f : both->failures) ADD_FAILURE() << f.to_string();
  ASSERT_GE(both->folders.size(), 3u) << "decode, prefill and the sampler";
  int kernels = 0;
  for (const std::string& folder : both->folders)
    for (const auto& f : ptx_files(folder)) {
      ++kernels;
      const std::string cmd = std::string(ptxas) + " -arch=sm_90 '" + f.string() + "' -o /dev/null";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  EXPECT_GT(kernels, 100);
}

// ---- On a GPU ---------------------------------------------------------------

std::vector<float> host_of(const Buffer& b) { return must(b.to_host<float>()); }

TEST(CudaDevice, ProductMatchesTheCpu) {
  REQUIRE_DEVICE();
  std::vector<float> a = testing::random_vec<float>(size_t(kA.count()), -1, 1, 1);
  std::vector<float> b = testing::random_vec<float>(size_t(kB.count()), -1, 1, 2);
  auto on_cpu = must(compile_fn(cpu(), program, kA, kB));
  std::vector<float> want = host_of(must(on_cpu.call(must(cpu().buffer(kA, a)), must(cpu().buffer(kB, b)))));
  // The shared-memory tiled matmul (37 x 45: edge tiles) and one thread per output.
  for (bool tiled : {true, false}) {
    SCOPED_TRACE(tiled ? "tiled matmul" : "one thread per output");
    CompileFnOptions o;
    o.compile.codegen.cuda.tile_matmul = tiled;
    auto on_gpu = must(compile_fn(gpu, o, program, kA, kB));
    std::vector<float> got = host_of(must(on_gpu.call(must(gpu.buffer(kA, a)), must(gpu.buffer(kB, b)))));
    EXPECT_TRUE(all_close(std::vector<double>(got.begin(), got.end()), std::vector<double>(want.begin(), want.end()),
                          1e-5, 1e-5));
  }
  // A right operand stored [n, k] (as Llama weights are), read through the
  // matmul's transposed indexing map.
  const Shape kBt(DType::kF32, {45, 70}, {"n", "k"});
  std::vector<float> bt(size_t(kBt.count()));
  for (int64_t k = 0; k < 70; ++k)
    for (int64_t n = 0; n < 45; ++n) bt[size_t(n * 70 + k)] = b[size_t(k * 45 + n)];
  auto on_gpu_t = must(compile_fn(gpu, program, kA, kBt));
  std::vector<float> got_t = host_of(must(on_gpu_t.call(must(gpu.buffer(kA, a)), must(gpu.buffer(kBt, bt)))));
  EXPECT_TRUE(all_close(std::vector<double>(got_t.begin(), got_t.end()), std::vector<double>(want.begin(), want.end()),
                        1e-5, 1e-5));
}

TEST(CudaDevice, DonationUpdatesInPlaceAndLoopsReadPositions) {
  REQUIRE_DEVICE();
  const Shape cache(DType::kF32, {16, 4}, {"s", "d"});
  const Shape row(DType::kF32, {1, 4}, {"s", "d"});
  const Shape pos(DType::kI32, {});
  auto fn = [](Tensor c, Tensor r, Tensor p) -> Tensor {
    return dynamic_update_slice(c, r, {{"s", p}}).reuse_buffer(c);
  };
  auto exe = must(compile_fn(gpu, fn, cache, row, pos));
  std::vector<float> zeros(64, 0.f);
  Buffer c = must(gpu.buffer(cache, zeros));
  const void* before = c.device_ptr();
  for (int32_t i = 0; i < 16; ++i) {
    Buffer r = must(gpu.buffer(row, std::vector<float>{float(i), float(i) + .25f, float(i) + .5f, float(i) + .75f}));
    c = must(exe.call(std::move(c), r, must(gpu.scalar<int32_t>(i))));
  }
  EXPECT_EQ(c.device_ptr(), before) << "donated: the same device memory every step";
  std::vector<float> got = host_of(c);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(got[size_t(i * 4 + j)], float(i) + .25f * float(j));
}

TEST(CudaDevice, ExecutableCacheAndPinnedOutputs) {
  REQUIRE_DEVICE();
  CompileFnOptions o;
  o.compile.cache_dir = fresh_dir("cache");
  auto fn = [](Tensor a, Tensor b) -> Tensor { return program(a, b).to_memory(MemoryKind::kPinnedHost); };
  auto first = must(compile_fn(gpu, o, fn, kA, kB));
  EXPECT_EQ(first.executable().stats().cache, CompileStats::Cache::kMiss);
  auto second = must(compile_fn(gpu, o, fn, kA, kB));
  EXPECT_EQ(second.executable().stats().cache, CompileStats::Cache::kHit);
  std::vector<float> a = testing::random_vec<float>(size_t(kA.count()), -1, 1, 3);
  std::vector<float> b = testing::random_vec<float>(size_t(kB.count()), -1, 1, 4);
  Buffer y1 = must(first.call(must(gpu.buffer(kA, a)), must(gpu.buffer(kB, b))));
  Buffer y2 = must(second.call(must(gpu.buffer(kA, a)), must(gpu.buffer(kB, b))));
  EXPECT_EQ(y2.memory_kind(), MemoryKind::kPinnedHost);
  EXPECT_EQ(host_of(y1), host_of(y2));
}

TEST(CudaDevice, CustomCallsGetTheStreamAndDeviceMemory) {
  REQUIRE_DEVICE();
  static void* seen_stream = nullptr;
  ASSERT_TRUE(ffi::register_handler("test.cuda_stream", "cuda", ffi::CppBundle{{}, {}, {}, [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
                void* s = nullptr;
                if (RadixFfi_Error* e = f->api->context_stream(f->ctx, &s)) return e;
                seen_stream = s;
                void* mem = nullptr;
                if (RadixFfi_Error* e = f->api->device_memory_allocate(f->ctx, 1024, 64, &mem)) return e;
                if (RadixFfi_Error* e = f->api->device_memory_free(f->ctx, mem, 1024)) return e;
                return nullptr;  // output aliases the input (see below): nothing to write
              }}).ok());
  CustomCallOptions opts;
  opts.output_operand_aliases = {{0, 0}};
  auto exe = must(compile_fn(gpu, [&](Tensor x) -> Tensor {
    return custom_call("test.cuda_stream", {x * 2.0f}, {x.shape()}, opts)[0] + 1.0f;
  }, Shape(DType::kF32, {4})));
  Buffer y = must(exe.call(must(gpu.buffer(Shape(DType::kF32, {4}), std::vector<float>{1, 2, 3, 4}))));
  EXPECT_NE(seen_stream, nullptr);
  EXPECT_EQ(host_of(y), (std::vector<float>{3, 5, 7, 9}));
}

TEST(CudaDevice, StoriesGreedyTextEqualsTheCpu) {
  REQUIRE_DEVICE();
  auto store = must(io::open_weights(testing::kModel));
  auto tk = must(tok::load_llama2c_tokenizer(testing::kTok, 512));
  auto run = [&](const Platform& p) {
    auto gen = must(models::LlamaGenerator::load(p, *store, testing::stories_options()));
    models::GenerateOptions o;
    o.temperature = 0;
    o.steps = 40;
    std::string text;
    int32_t prev = tk->bos();
    const std::vector<int32_t> prompt = {tk->bos()};
    (void)must(gen->generate(prompt, o, [&](int32_t t) {
      text += tk->piece(prev, t);
      prev = t;
      return true;
    }));
    return text;
  };
  EXPECT_EQ(run(gpu), run(cpu()));
}

}  // namespace
}  // namespace radix
