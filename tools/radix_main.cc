// The `radix` command-line tool.
//
//   radix example [options]   trace, compile and run the built-in MLP example
//   radix help                this text
#include <algorithm>
#include <filesystem>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "examples/mlp.h"
#include "radix/radix.h"
#include "tools/commands.h"

using namespace radix;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

const char* kUsage =
    "usage: radix <command> [options]\n"
    "\n"
    "commands:\n"
    "  generate    run a Llama model (llama2.c / safetensors weights) and stream its text;\n"
    "              'radix generate --help' lists its options\n"
    "  convert     write any weight file as safetensors ('radix convert --help')\n"
    "  bench       Radix vs OpenBLAS, oneDNN and memcpy, kernel by kernel ('radix bench --help')\n"
    "  bench-cuda  the CUDA backend on the GPU: matmul TFLOP/s, Llama tokens/s, compile times\n"
    "              ('radix bench-cuda --help')\n"
    "  example     trace, compile and run a small MLP with seeded weights; prints its\n"
    "              output, the compile and run timings, and the error against a naive\n"
    "              C++ reference\n"
    "  help        show this text\n"
    "\n"
    "example options:\n"
    "  --batch N        rows of the input (default 8)\n"
    "  --in N           input features (default 64)\n"
    "  --hidden N       hidden width (default 128)\n"
    "  --layers N       hidden layers (default 2)\n"
    "  --out N          output features (default 16)\n"
    "  --iters N        timed calls after the first (default 100)\n"
    "  --seed N         weight / input seed (default 1234)\n"
    "  --dump STAGES    print IR stages, comma separated; cpu: traced, partition, collectives\n"
    "                   (sharded runs), dps, fuse, schedule-script, schedule, bufferize, math,\n"
    "                   lower, llvm-ir; cuda: traced, custom-calls, dps, fuse, bufferize,\n"
    "                   gpu-map, nvvm, ptx (one .ptx file per kernel), host, llvm-ir; or all\n"
    "  --dump-dir DIR   write the dumps into DIR/<platform>/<name>_<key>/ (with module.mlir)\n"
    "                   instead of standard error\n"
    "  --cache-dir DIR  on-disk executable cache: a later run of the same program loads\n"
    "                   the compiled code from DIR instead of compiling (prints\n"
    "                   'cache: miss' or 'cache: hit')\n"
    "  --target-cpu CPU generate code for CPU (an LLVM CPU name; default host)\n"
    "  --opt-level N    LLVM optimization level 0..3 (default 3)\n"
    "  --no-vectorize   skip the tiling + vectorization schedule (scalar loops)\n"
    "  --libm-math      f32 exp/log/tanh through libm instead of polynomial approximations\n"
    "  --verbose        per-stage compile progress\n"
    "  --profile FILE   write a Chrome / Perfetto trace (tracing, stages, codegen, calls) to FILE\n"
    "  --platform NAME  cpu (default) or cuda (an NVIDIA GPU through the CUDA driver;\n"
    "                   without a GPU or driver it exits with 'no CUDA device: ...')\n"
    "  --compile-only   trace and compile without running (needs no device); with\n"
    "                   --platform cuda and --dump-dir DIR, each kernel's PTX is written\n"
    "                   as DIR/cuda/<name>_<key>/<kernel>.ptx\n"
    "  --target SM      GPU architecture for --platform cuda (sm_80, sm_90, ...; default:\n"
    "                   the device's, or sm_90 without one)\n"
    "  --sharded [data|tensor]\n"
    "                   run over every process of an MPI job, one device each\n"
    "                   (mpirun -np N radix example --sharded): 'data' (the default)\n"
    "                   splits the batch; 'tensor' splits the weights (Megatron:\n"
    "                   column- then row-parallel layers, all-reduces between); rank 0\n"
    "                   prints, every rank checks the whole result\n";

struct ExampleArgs {
  int64_t batch = 8;
  examples::MlpConfig cfg;
  int iters = 100;
  CompileOptions compile;
  std::string profile;  // trace-event JSON path, empty = off
  examples::MlpParallel parallel = examples::MlpParallel::kNone;
  std::string platform = "cpu";
  bool compile_only = false;
};

bool parse_int(const char* flag, const char* v, int64_t lo, int64_t* out, std::string* err) {
  char* end = nullptr;
  long long x = v ? std::strtoll(v, &end, 10) : 0;
  if (!v || *v == '\0' || *end != '\0' || x < lo) {
    *err = std::string(flag) + " needs an integer >= " + std::to_string(lo) + ", got '" + (v ? v : "") + "'";
    return false;
  }
  *out = x;
  return true;
}

bool parse_example(int argc, char** argv, ExampleArgs* a, std::string* err) {
  for (int i = 0; i < argc; ++i) {
    std::string f = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    int64_t x = 0;
    auto num = [&](int64_t lo) {
      if (!parse_int(f.c_str(), v, lo, &x, err)) return false;
      ++i;
      return true;
    };
    if (f == "--batch") { if (!num(1)) return false; a->batch = x; }
    else if (f == "--in") { if (!num(1)) return false; a->cfg.in = x; }
    else if (f == "--hidden") { if (!num(1)) return false; a->cfg.hidden = x; }
    else if (f == "--layers") { if (!num(0)) return false; a->cfg.n_hidden = static_cast<int>(x); }
    else if (f == "--out") { if (!num(1)) return false; a->cfg.out = x; }
    else if (f == "--iters") { if (!num(0)) return false; a->iters = static_cast<int>(x); }
    else if (f == "--seed") { if (!num(0)) return false; a->cfg.seed = static_cast<uint32_t>(x); }
    else if (f == "--dump") {
      if (!v) { *err = "--dump needs a list of stages"; return false; }
      std::stringstream ss(v);
      std::string s;
      while (std::getline(ss, s, ',')) a->compile.diagnostics.dump.push_back(s);  // checked by the platform
      ++i;
    } else if (f == "--dump-dir") {
      if (!v) { *err = "--dump-dir needs a folder"; return false; }
      a->compile.diagnostics.dump_dir = v;
      ++i;
    } else if (f == "--cache-dir") {
      if (!v || !*v) { *err = "--cache-dir needs a folder"; return false; }
      a->compile.cache_dir = v;
      ++i;
    } else if (f == "--target-cpu") {
      if (!v || !*v) { *err = "--target-cpu needs a CPU name"; return false; }
      a->compile.codegen.target_cpu = v;
      ++i;
    } else if (f == "--opt-level") {
      if (!num(0)) return false;
      a->compile.codegen.opt_level = static_cast<int>(x);
    } else if (f == "--no-vectorize") a->compile.codegen.cpu.vectorize = false;
    else if (f == "--libm-math") a->compile.codegen.cpu.approximate_math = false;
    else if (f == "--verbose") a->compile.diagnostics.verbose = true;
    else if (f == "--platform") {
      if (!v || !*v) { *err = "--platform needs a name (cpu or cuda)"; return false; }
      a->platform = v;
      ++i;
    } else if (f == "--compile-only") a->compile_only = true;
    else if (f == "--target") {
      if (!v || !*v) { *err = "--target needs a GPU architecture (e.g. sm_90)"; return false; }
      a->compile.codegen.cuda.target = v;
      ++i;
    }
    else if (f == "--sharded") {
      a->parallel = examples::MlpParallel::kData;
      if (v && (std::string(v) == "data" || std::string(v) == "tensor")) {
        if (std::string(v) == "tensor") a->parallel = examples::MlpParallel::kTensor;
        ++i;
      }
    } else if (f == "--profile") {
      if (!v || !*v) { *err = "--profile needs a file path"; return false; }
      a->profile = v;
      ++i;
    }
    else { *err = "unknown option '" + f + "'"; return false; }
  }
  return true;
}

// --compile-only: trace and compile for the platform without running (no
// device needed); with --dump-dir, a CUDA compile writes each kernel's PTX.
int compile_example_only(const ExampleArgs& a) {
  auto platform = Platform::for_compiling(a.platform);
  if (!platform.ok()) return std::fprintf(stderr, "error: %s\n", platform.status().to_string().c_str()), 1;
  const auto& c = a.cfg;
  CompileFnOptions opts;
  opts.trace.name = "mlp";
  opts.compile = a.compile;
  if (!opts.compile.diagnostics.dump_dir.empty() && a.platform == "cuda" &&
      std::find(opts.compile.diagnostics.dump.begin(), opts.compile.diagnostics.dump.end(), "ptx") ==
          opts.compile.diagnostics.dump.end())
    opts.compile.diagnostics.dump.push_back("ptx");
  examples::HostMlp host = examples::make_host_mlp(c);
  auto weights = examples::upload_mlp(Platform::cpu(), host, Mesh(), examples::MlpParallel::kNone);
  if (!weights.ok()) return std::fprintf(stderr, "error: %s\n", weights.status().to_string().c_str()), 1;
  Shape x_shape(DType::kF32, {a.batch, c.in}, {"b", "d"});
  auto t0 = Clock::now();
  auto traced = trace_model(opts, tensors_like(*weights), &examples::Mlp<Tensor>::forward, x_shape);
  if (!traced.ok()) return std::fprintf(stderr, "error: %s\n", traced.status().to_string().c_str()), 1;
  auto st = platform->compile_only(*traced, opts.compile);
  if (!st.ok()) return std::fprintf(stderr, "error: %s\n", st.status().to_string().c_str()), 1;
  std::printf("radix example: MLP compiled for %s%s without running it\n", a.platform.c_str(),
              a.platform == "cuda" ? (" (" + (a.compile.codegen.cuda.target.empty() ? std::string("default target")
                                                                                    : a.compile.codegen.cuda.target) + ")").c_str()
                                   : "");
  std::printf("  compile   %8.2f ms  (trace, then lower %.2f ms, codegen %.2f ms)\n", ms_since(t0), st->lower_ms,
              st->jit_ms);
  std::printf("  signature %s\n", traced->signature().to_string().c_str());
  if (!st->dump_folder.empty()) {
    std::vector<std::string> ptx;
    for (const auto& e : std::filesystem::directory_iterator(st->dump_folder))
      if (e.path().extension() == ".ptx") ptx.push_back(e.path().filename().string());
    std::sort(ptx.begin(), ptx.end());
    if (ptx.empty()) std::printf("  dumps     %s\n", st->dump_folder.c_str());
    else std::printf("  kernels   %zu, PTX in %s:\n", ptx.size(), st->dump_folder.c_str());
    for (const std::string& f : ptx) std::printf("            %s\n", f.c_str());
  }
  return 0;
}

int run_example(const ExampleArgs& a) {
  if (a.compile_only) return compile_example_only(a);
  auto got = Platform::get(a.platform);
  if (!got.ok()) return std::fprintf(stderr, "error: %s\n", got.status().to_string().c_str()), 1;
  Platform platform = std::move(got).value();
  const auto& c = a.cfg;
  // Sharded: one device per MPI process on a mesh of one axis "x"; rank 0
  // prints (the others check silently), so the output reads as one run's.
  const bool sharded = a.parallel != examples::MlpParallel::kNone;
  const Mesh mesh = sharded ? Mesh({{"x", distributed::size()}}) : Mesh();
  if (sharded && distributed::rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    return std::fprintf(stderr, "error: cannot silence rank %d's output\n", distributed::rank()), 1;
  std::printf("radix example: MLP %lld", (long long)c.in);
  for (int i = 0; i <= c.n_hidden; ++i) std::printf(" -> %lld", (long long)c.hidden);
  std::printf(" -> %lld, batch %lld, platform %s\n", (long long)c.out, (long long)a.batch, platform.name().c_str());
  if (sharded)
    std::printf("  sharded   %s parallel over %s (%d MPI processes, one device each)\n",
                a.parallel == examples::MlpParallel::kData ? "data" : "tensor", mesh.to_string().c_str(),
                distributed::size());

  auto t0 = Clock::now();
  examples::HostMlp host = examples::make_host_mlp(c);
  auto weights = examples::upload_mlp(platform, host, mesh, a.parallel);
  if (!weights.ok()) return std::fprintf(stderr, "error: %s\n", weights.status().to_string().c_str()), 1;
  std::printf("  weights   %8.2f ms  (%zu layers, seeded)\n", ms_since(t0), host.layers.size());

  std::fflush(stdout);  // keep progress lines in order with --verbose output on stderr
  t0 = Clock::now();
  CompileFnOptions opts;
  opts.trace.name = "mlp";
  opts.trace.mesh = mesh;
  opts.compile = a.compile;
  Shape x_shape(DType::kF32, {a.batch, c.in}, {"b", "d"});
  if (a.parallel == examples::MlpParallel::kData) x_shape = x_shape.with_partition("b", "x");
  auto exe = compile_model(platform, opts, tensors_like(*weights, mesh), &examples::Mlp<Tensor>::forward, x_shape);
  if (!exe.ok()) return std::fprintf(stderr, "error: %s\n", exe.status().to_string().c_str()), 1;
  const CompileStats& st = exe->executable().stats();
  if (st.cache == CompileStats::Cache::kHit)
    std::printf("  compile   %8.2f ms  (trace, then load from the executable cache %.2f ms)\n", ms_since(t0),
                st.cache_load_ms);
  else
    std::printf("  compile   %8.2f ms  (trace, then lower %.2f ms, jit %.2f ms)\n", ms_since(t0), st.lower_ms,
                st.jit_ms);
  if (st.cache == CompileStats::Cache::kHit)
    std::printf("  cache: hit, loaded in %.2f ms from %s\n", st.cache_load_ms, st.cache_entry.c_str());
  else if (st.cache != CompileStats::Cache::kOff)
    std::printf("  cache: %s, compiled and stored in %s (%.2f ms)\n", cache_result_name(st.cache),
                st.cache_entry.c_str(), st.cache_store_ms);
  std::printf("  signature %s\n", exe->executable().signature().to_string().c_str());

  auto ready = exe->prepare(std::move(*weights));
  if (!ready.ok()) return std::fprintf(stderr, "error: %s\n", ready.status().to_string().c_str()), 1;

  std::mt19937 rng(c.seed + 1);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(a.batch * c.in));
  for (auto& v : x) v = d(rng);
  auto xb = sharded ? upload_shard(platform, mesh, x_shape, std::span<const float>(x)) : platform.buffer(x_shape, x);
  if (!xb.ok()) return std::fprintf(stderr, "error: %s\n", xb.status().to_string().c_str()), 1;

  t0 = Clock::now();
  auto y = ready->call(*xb);
  if (!y.ok()) return std::fprintf(stderr, "error: %s\n", y.status().to_string().c_str()), 1;
  double first_ms = ms_since(t0);
  std::vector<double> times;
  for (int i = 0; i < a.iters; ++i) {
    auto t1 = Clock::now();
    auto yi = ready->call(*xb);
    if (!yi.ok()) return std::fprintf(stderr, "error: %s\n", yi.status().to_string().c_str()), 1;
    times.push_back(ms_since(t1));
  }
  std::sort(times.begin(), times.end());
  std::printf("  run       %8.3f ms first call", first_ms);
  if (!times.empty()) std::printf(", %.3f ms median of %d", times[times.size() / 2], a.iters);
  std::printf("\n");

  auto out = y->to_host<float>();
  if (!out.ok()) return std::fprintf(stderr, "error: %s\n", out.status().to_string().c_str()), 1;
  std::vector<float> ref = examples::mlp_reference(host, x, a.batch);
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_err = std::max(max_err, std::fabs(static_cast<double>((*out)[i]) - ref[i]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref[i])));
  }
  std::printf("  output    %s, first row:", y->shape().to_string().c_str());
  for (int64_t j = 0; j < std::min<int64_t>(c.out, 8); ++j) std::printf(" %.4f", (*out)[static_cast<size_t>(j)]);
  std::printf("%s\n", c.out > 8 ? " ..." : "");
  const double rel = max_err / std::max(max_ref, 1e-30);
  const bool ok = rel < 1e-4;
  std::printf("  check     max |radix - reference| = %.3g (relative %.3g, tolerance 1e-4): %s\n", max_err, rel,
              ok ? "OK" : "MISMATCH");
  if (!ok && sharded && distributed::rank() != 0)
    std::fprintf(stderr, "radix example: rank %d: result differs from the reference by %.3g\n", distributed::rank(),
                 max_err);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "generate") return radix::cli::run_generate(argc - 2, argv + 2);
  if (cmd == "convert") return radix::cli::run_convert(argc - 2, argv + 2);
  if (cmd == "bench") return radix::cli::run_bench(argc - 2, argv + 2);
  if (cmd == "bench-cuda") return radix::cli::run_bench_cuda(argc - 2, argv + 2);
  if (cmd == "example") {
    for (int i = 2; i < argc; ++i)
      if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return std::fputs(kUsage, stdout), 0;
    ExampleArgs a;
    std::string err;
    if (!parse_example(argc - 2, argv + 2, &a, &err)) {
      std::fprintf(stderr, "radix example: %s\n(see 'radix help')\n", err.c_str());
      return 2;
    }
    // Options (dump stages, target) are checked by the platform's backend,
    // which needs no device for that.
    auto named = Platform::for_compiling(a.platform);
    if (!named.ok()) return std::fprintf(stderr, "radix example: --platform: %s\n", named.status().message().c_str()), 2;
    if (Status st = named->backend()->check_options(a.compile); !st.ok())
      return std::fprintf(stderr, "radix example: %s\n(see 'radix help')\n", st.message().c_str()), 2;
    if (a.platform != "cpu" && a.parallel != examples::MlpParallel::kNone)
      return std::fprintf(stderr, "radix example: --sharded runs on the cpu platform only\n"), 2;
    if (!a.profile.empty()) Profiler::start(a.profile);
    int rc = run_example(a);
    if (!a.profile.empty()) {
      Status st = Profiler::stop();
      if (!st.ok()) {
        std::fprintf(stderr, "radix example: %s\n", st.to_string().c_str());
        return 1;
      }
      std::printf("  profile   %s (open in ui.perfetto.dev or chrome://tracing)\n", a.profile.c_str());
    }
    return rc;
  }
  std::fprintf(stderr, "radix: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
  return 2;
}
