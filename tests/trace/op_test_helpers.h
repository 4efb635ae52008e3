// Shared helpers of the op numerics tests (ops_*_test.cc): host data in
// every dtype (raw bits for bool / f16 / bf16), a run() that compiles, calls and
// decodes, and the comparison of decoded values with a dtype-aware tolerance.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "radix/core/half.h"
#include "test_util.h"

namespace radix {
namespace {

// Host values are carried as `long double` (exact for every i64 / u64 on the
// platforms we build for), encoded to each dtype's host type on the way in
// (uint8_t for bool, uint16_t raw bits for f16 / bf16) and decoded on the way out.
using Val = long double;
using Vals = std::vector<Val>;
using radix::testing::all_close;
using radix::testing::cpu;
using radix::testing::must;

// Calls f.template operator()<T>() with T the host type of dtype d.
template <class F>
decltype(auto) with_host_type(DType d, F&& f) {
  switch (d) {
    case DType::kBool: case DType::kU8: return f.template operator()<uint8_t>();
    case DType::kI8: return f.template operator()<int8_t>();
    case DType::kI16: return f.template operator()<int16_t>();
    case DType::kI32: return f.template operator()<int32_t>();
    case DType::kI64: return f.template operator()<int64_t>();
    case DType::kU16: case DType::kF16: case DType::kBF16: return f.template operator()<uint16_t>();
    case DType::kU32: return f.template operator()<uint32_t>();
    case DType::kU64: return f.template operator()<uint64_t>();
    case DType::kF32: return f.template operator()<float>();
    case DType::kF64: return f.template operator()<double>();
  }
  throw std::logic_error("unknown dtype");
}

// The nearest value of float dtype d (identity for other dtypes).
Val quantize(DType d, Val v) {
  switch (d) {
    case DType::kF16: return f16_to_float(float_to_f16(static_cast<float>(v)));
    case DType::kBF16: return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    case DType::kF32: return static_cast<float>(v);
    case DType::kF64: return static_cast<double>(v);
    default: return v;
  }
}
Vals quantize(DType d, Vals v) {
  for (Val& x : v) x = quantize(d, x);
  return v;
}

// Integer dtypes: v reduced modulo 2^bits into d's range (C++ conversion rules);
// bool: v != 0; floats: quantize.
Val wrap(DType d, Val v) {
  if (is_float(d)) return quantize(d, v);
  if (is_bool(d)) return v != 0 ? 1 : 0;
  return with_host_type(d, [&]<class T>() -> Val {
    T t = v < 0 ? static_cast<T>(static_cast<int64_t>(v)) : static_cast<T>(static_cast<uint64_t>(v));
    return static_cast<Val>(t);
  });
}

// Compile options for run(); ScalarLoops clears .compile.codegen.cpu.vectorize to check
// the plain-loop path too.
CompileFnOptions g_opts;
// While alive, run() compiles without the vectorizing schedule (plain loops).
struct ScalarLoops {
  ScalarLoops() { g_opts.compile.codegen.cpu.vectorize = false; }
  ~ScalarLoops() { g_opts.compile.codegen.cpu.vectorize = true; }
};

// The platform the harness runs on: the CPU, or with RADIX_TEST_PLATFORM=cuda
// the GPU (every op checked against the same references on the device).
Platform& harness_platform() {
  static Platform p = [] {
    const char* name = std::getenv("RADIX_TEST_PLATFORM");
    if (!name || !*name) return cpu();
    auto r = Platform::get(name);
    if (!r.ok()) {
      std::fprintf(stderr, "RADIX_TEST_PLATFORM=%s: %s\n", name, r.status().to_string().c_str());
      std::abort();
    }
    return std::move(r).value();
  }();
  return p;
}

// With RADIX_TEST_PTXAS=<ptxas> set, run() also compiles every program for
// CUDA without a device (Platform::compile_only, sm_90), writes each
// kernel's PTX and has the toolkit's ptxas assemble it: a kernel that LLVM's
// NVPTX target emits but ptxas rejects fails the test, naming the file.
void check_ptx_with_ptxas(const TracedModule& module) {
  const char* ptxas = std::getenv("RADIX_TEST_PTXAS");
  if (!ptxas || !*ptxas) return;
  static int counter = 0;
  const std::string dir = ::testing::TempDir() + "radix_ptx_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  CompileOptions o = g_opts.compile;
  o.codegen.cuda.target = "sm_90";
  o.diagnostics.dump = {"ptx"};
  o.diagnostics.dump_dir = dir;
  auto cuda = Platform::for_compiling("cuda");
  ASSERT_TRUE(cuda.ok()) << cuda.status().to_string();
  // The harness runs a program once per CPU schedule variant; for CUDA they
  // are one program (the CPU's options are not part of its key).
  static std::set<std::string> checked;
  auto key = cuda->cache_key(module, o);
  ASSERT_TRUE(key.ok()) << key.status().to_string();
  if (!checked.insert(*key).second) return;
  auto st = cuda->compile_only(module, o);
  ASSERT_TRUE(st.ok()) << "CUDA compile of " << module.signature().to_string() << ": " << st.status().to_string();
  int kernels = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".ptx") continue;
    ++kernels;
    const std::string cmd = std::string(ptxas) + " -arch=sm_90 '" + e.path().string() + "' -o /dev/null 2>&1";
    std::string out;
    FILE* f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[512];
    while (fgets(buf, sizeof buf, f)) out += buf;
    const int rc = pclose(f);
    EXPECT_EQ(rc, 0) << "ptxas rejected " << e.path() << ":\n" << out;
  }
  EXPECT_GT(kernels, 0) << "no kernel PTX written for " << module.signature().to_string();
  std::filesystem::remove_all(dir);
}

Buffer to_device(const Shape& s, const Vals& v) {
  const DType d = s.dtype();
  return with_host_type(d, [&]<class T>() {
    std::vector<T> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      if (d == DType::kF16) h[i] = static_cast<T>(float_to_f16(static_cast<float>(v[i])));
      else if (d == DType::kBF16) h[i] = static_cast<T>(float_to_bf16(static_cast<float>(v[i])));
      else if (d == DType::kBool) h[i] = static_cast<T>(v[i] != 0);
      else h[i] = static_cast<T>(v[i]);
    }
    return must(harness_platform().buffer(s, h));
  });
}

Vals to_host(const Buffer& b) {
  const DType d = b.dtype();
  return with_host_type(d, [&]<class T>() {
    std::vector<T> h = must(b.to_host<T>());
    Vals v(h.size());
    for (size_t i = 0; i < h.size(); ++i) {
      if (d == DType::kF16) v[i] = f16_to_float(static_cast<uint16_t>(h[i]));
      else if (d == DType::kBF16) v[i] = bf16_to_float(static_cast<uint16_t>(h[i]));
      else v[i] = static_cast<Val>(h[i]);
    }
    return v;
  });
}

// Compiled outputs: values (decoded) and the signature's output shapes.
struct Outs {
  std::vector<Vals> values;
  std::vector<Shape> shapes;
};

// Compiles fn for `shapes`, runs it on `inputs` (one Vals per shape) and
// returns every output. fn returns a Tensor or a std::vector<Tensor>.
template <class Fn, class... S>
Outs run(Fn fn, const std::vector<Vals>& inputs, const S&... shapes) {
  if (std::getenv("RADIX_TEST_PTXAS")) {
    auto traced = trace_fn(g_opts, fn, shapes...);
    if (!traced.ok()) ADD_FAILURE() << "trace failed: " << traced.status().to_string();
    else check_ptx_with_ptxas(*traced);
  }
  auto exe = compile_fn(harness_platform(), g_opts, fn, shapes...);
  if (!exe.ok()) {
    ADD_FAILURE() << "compile failed: " << exe.status().to_string();
    throw std::runtime_error(exe.status().to_string());
  }
  const std::vector<Shape> sh{shapes...};
  std::vector<Buffer> bufs;
  for (size_t i = 0; i < sh.size(); ++i) bufs.push_back(to_device(sh[i], inputs.at(i)));
  auto res = [&]<size_t... I>(std::index_sequence<I...>) {
    return must(exe->call(bufs[I]...));
  }(std::index_sequence_for<S...>{});
  Outs o;
  o.shapes = exe->executable().signature().outputs;
  if constexpr (std::is_same_v<decltype(res), Buffer>) {
    o.values.push_back(to_host(res));
  } else {
    for (const Buffer& b : res) o.values.push_back(to_host(b));
  }
  return o;
}

// Integers and bools: exact. Floats: |got - want| <= atol + rtol * |want|
// (NaN matches NaN; an infinity must match exactly).
::testing::AssertionResult close(const Vals& got, const Vals& want, DType d, double rtol = 0, double atol = 0) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  if (!is_float(d)) {
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i])
        return ::testing::AssertionFailure() << dtype_name(d) << " element " << i << ": got " << got[i] << ", want "
                                             << want[i] << " (exact)";
    return ::testing::AssertionSuccess();
  }
  std::vector<double> g, w;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i]) || std::isinf(got[i])) {
      if (got[i] != want[i])
        return ::testing::AssertionFailure() << dtype_name(d) << " element " << i << ": got " << got[i]
                                             << ", want " << want[i];
      continue;
    }
    g.push_back(static_cast<double>(got[i]));
    w.push_back(static_cast<double>(want[i]));
  }
  auto r = all_close(g, w, rtol, atol);
  if (!r) return r << " [" << dtype_name(d) << ", finite elements only]";
  return r;
}

Vals rand_vals(size_t n, double lo, double hi, uint32_t seed) {
  std::vector<double> v = radix::testing::random_vec<double>(n, lo, hi, seed);
  return Vals(v.begin(), v.end());
}

// Unit roundoff-ish epsilon of a float dtype (spacing of values in [1, 2)).
double eps(DType d) {
  switch (d) {
    case DType::kF16: return 0x1p-10;
    case DType::kBF16: return 0x1p-7;
    case DType::kF32: return 0x1p-23;
    default: return 0x1p-52;
  }
}

// Row-major strides of dims.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}
int64_t count_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}
// Multi-index of linear index `lin` in dims.
std::vector<int64_t> unravel(int64_t lin, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    idx[i] = lin % dims[i];
    lin /= dims[i];
  }
  return idx;
}
Shape shape_of(DType d, std::vector<int64_t> dims, std::vector<Tag> tags = {}) {
  if (tags.empty()) return Shape(d, std::span<const int64_t>(dims));
  return Shape(d, std::span<const int64_t>(dims), std::span<const Tag>(tags));
}

// Runs `body` under every schedule: the SSE, AVX2 and AVX-512 tilings
// (CompileOptions::schedule_isa), then as plain loops (vectorize off).
void on_every_schedule(const std::function<void()>& body) {
  const VectorIsa isas[] = {{4, 16}, {8, 16}, {16, 32}};
  for (const VectorIsa& isa : isas) {
    SCOPED_TRACE("schedule_isa " + std::to_string(isa.f32_lanes) + " lanes");
    g_opts.compile.codegen.cpu.schedule_isa = isa;
    body();
  }
  g_opts.compile.codegen.cpu.schedule_isa = {};
  ScalarLoops scalar;
  SCOPED_TRACE("scalar loops");
  body();
}

// 0, 1, ..., n-1.
Vals iota_vals(int64_t n) {
  Vals v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<Val>(i));
  return v;
}

}  // namespace
}  // namespace radix
