// Shared helpers for Radix tests: seeded random host data and comparisons.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "radix/radix.h"

namespace radix::testing {

// The vector ISAs the CPU schedule tiles for (CpuOptions::schedule_isa):
// each one's tiling runs on this host, so all are checked on any machine.
struct IsaCase {
  const char* name;
  VectorIsa isa;
};
inline constexpr IsaCase kIsas[] = {{"sse", {4, 16}}, {"avx2", {8, 16}}, {"avx512", {16, 32}}};

// Options that compile with one ISA's tiling on `threads` threads (0: the
// default, every core) and dump `stages` (DiagnosticOptions::dump names)
// into `dir`, emptied first; no stages, no dump.
inline CompileFnOptions isa_options(const IsaCase& c, int threads = 0, std::vector<std::string> stages = {},
                                    const std::filesystem::path& dir = {}) {
  CompileFnOptions o;
  o.compile.codegen.cpu.schedule_isa = c.isa;
  o.compile.codegen.cpu.threads = threads;
  if (!stages.empty()) {
    std::filesystem::remove_all(dir);
    o.compile.diagnostics.dump = std::move(stages);
    o.compile.diagnostics.dump_dir = dir.string();
  }
  return o;
}

inline Platform& cpu() {
  static Platform p = Platform::cpu();
  return p;
}

// Uniform values in [lo, hi), seeded.
template <class T>
std::vector<T> random_vec(size_t n, double lo, double hi, uint32_t seed = 42) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

// a [M, K] · b [K, N] (row-major f32) summed in double: the naive reference
// of matmul tests.
inline std::vector<double> matmul_reference(const std::vector<float>& a, const std::vector<float>& b, int64_t M,
                                            int64_t N, int64_t K) {
  std::vector<double> c(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) c[size_t(i * N + j)] += double(a[size_t(i * K + k)]) * b[size_t(k * N + j)];
  return c;
}

// Unwraps a Result in a test, failing with its message.
template <class T>
T must(Result<T> r) {
  if (!r.ok()) {
    ADD_FAILURE() << r.status().to_string();
    throw std::runtime_error(r.status().to_string());
  }
  return std::move(r).value();
}

// Relative-or-absolute closeness: |a - b| <= atol + rtol * |b|.
template <class T>
::testing::AssertionResult all_close(const std::vector<T>& got, const std::vector<T>& want, double rtol,
                                     double atol = 0) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w)))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w
                                           << " (rtol " << rtol << ", atol " << atol << ")";
  }
  return ::testing::AssertionSuccess();
}

// How many times `needle` occurs in `text` (overlapping occurrences count).
inline size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// The lines of `text` holding both `a` and `b` (a buffer allocated with a
// given type: lines_with(ir, "memref.alloc", "memref<256x256xf32>")).
inline std::vector<std::string> lines_with(const std::string& text, const std::string& a, const std::string& b) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) found.push_back(line);
  return found;
}

// The bodies of the single-block loops of an x86 assembly dump (the "asm"
// stage): from a label `.LBB..:` to a jump back to it, no other label
// between. The hot loops of a kernel, without the code that runs once per
// tile around them.
inline std::vector<std::string> innermost_asm_loops(const std::string& asm_text) {
  std::vector<std::string> loops;
  std::string label, body;
  size_t at = 0;
  while (at < asm_text.size()) {
    size_t end = asm_text.find('\n', at);
    if (end == std::string::npos) end = asm_text.size();
    const std::string line = asm_text.substr(at, end - at);
    at = end + 1;
    if (line.rfind(".LBB", 0) == 0 && line.find(':') != std::string::npos) {
      label = line.substr(0, line.find(':'));
      body.clear();
      continue;
    }
    if (label.empty()) continue;
    body += line + "\n";
    const size_t j = line.find("\tj");
    if (j != std::string::npos && line.size() >= label.size() &&
        line.compare(line.size() - label.size(), label.size(), label) == 0) {
      loops.push_back(body);
      label.clear();
    }
  }
  return loops;
}

// Stage dumps a compile wrote under DiagnosticOptions::dump_dir `dir`
// (<dir>/<backend>/<name>_<key>/NN-<stage>.<ext>): the text of the one named
// `stage_file` ("schedule.mlir", "llvm-ir.ll"), or "" if absent.
inline std::string stage_dump(const std::filesystem::path& dir, const std::string& stage_file) {
  if (!std::filesystem::exists(dir)) return "";
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() > 3 && name.substr(3) == stage_file) {
      std::ifstream f(e.path());
      return std::string(std::istreambuf_iterator<char>(f), {});
    }
  }
  return "";
}
// Every stage dump under `dir`, concatenated (module.mlir, the traced
// module every dump folder holds, left out).
inline std::string all_stage_dumps(const std::filesystem::path& dir) {
  std::string text;
  if (!std::filesystem::exists(dir)) return text;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename() == "module.mlir") continue;
    std::ifstream f(e.path());
    text += std::string(std::istreambuf_iterator<char>(f), {});
  }
  return text;
}

}  // namespace radix::testing
