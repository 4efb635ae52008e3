// RADIX_PERF_MAP: loading an executable appends its functions to perf's map
// of JIT code, /tmp/perf-<pid>.map ("start size name", hex), so that
// `perf report` names the compiled functions instead of raw addresses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

}  // namespace
}  // namespace radix
