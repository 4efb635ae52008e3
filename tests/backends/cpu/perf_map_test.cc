// RADIX_PERF_MAP: loading an executable appends its functions to perf's map
// of JIT code, /tmp/perf-<pid>.map ("start size name", hex), so that
// `perf report` names the compiled functions instead of raw addresses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace radix {
namespace {

TEST(PerfMap, LoadedFunctionsAreListedWithAddressAndSize) {
  const std::string path = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
  std::filesystem::remove(path);
  ::setenv("RADIX_PERF_MAP", "1", 1);
  auto exe = testing::must(compile_fn(testing::cpu(), [](Tensor x) { return relu(x) * 2.0; }, Shape(DType::kF32, {8})));
  ::unsetenv("RADIX_PERF_MAP");
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  std::stringstream text;
  text << f.rdbuf();
  // "7f12a4c01000 1a0 main": the traced function, at a nonzero address with a size.
  EXPECT_TRUE(std::regex_search(text.str(), std::regex("(^|\n)[0-9a-f]+ [0-9a-f]+ main\n"))) << text.str();
  std::filesystem::remove(path);
  // Without the variable nothing is written.
  auto again = testing::must(compile_fn(testing::cpu(), [](Tensor x) { return relu(x) * 3.0; }, Shape(DType::kF32, {8})));
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A threaded program spends its time in OpenMP's outlined loop bodies, which
// have internal linkage: they are listed too, each at its own address (in the
// loaded code, apart from main's).
TEST(PerfMap, OpenMpLoopBodiesAreListed) {
  const std::string path = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
  std::filesystem::remove(path);
  CompileFnOptions o;
  o.compile.codegen.cpu.threads = 2;
  ::setenv("RADIX_PERF_MAP", "1", 1);
  auto exe = testing::must(
      compile_fn(testing::cpu(), o, [](Tensor x) { return relu(x) * 2.0; }, Shape(DType::kF32, {1 << 20})));
  ::unsetenv("RADIX_PERF_MAP");
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  std::map<std::string, std::pair<uint64_t, uint64_t>> listed;  // name -> (start, size)
  std::string start, size, name;
  while (f >> start >> size >> name) listed[name] = {std::stoull(start, nullptr, 16), std::stoull(size, nullptr, 16)};
  ASSERT_TRUE(listed.count("main")) << path;
  const auto body = std::find_if(listed.begin(), listed.end(),
                                 [](const auto& e) { return e.first.find("omp_par") != std::string::npos; });
  ASSERT_NE(body, listed.end()) << "no OpenMP loop body listed in " << path;
  const auto [main_start, main_size] = listed["main"];
  const auto [body_start, body_size] = body->second;
  EXPECT_GT(body_size, 0u);
  // Two functions of one object: disjoint, within a few pages of each other.
  EXPECT_TRUE(body_start + body_size <= main_start || main_start + main_size <= body_start);
  EXPECT_LT(body_start > main_start ? body_start - main_start : main_start - body_start, uint64_t{1} << 20);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace radix
