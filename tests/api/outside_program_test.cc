// The README's recipe for building a program against Radix, run verbatim:
// compile tests/api/outside_program.cc with the documented command line, run
// it, and check what it prints against the closed form x * x + 1.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return "popen failed";
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  *status = pclose(p);
  return out;
}

TEST(OutsideProgram, BuildsWithTheReadmeCommandAndRuns) {
  const std::filesystem::path bin =
      std::filesystem::temp_directory_path() / ("radix-outside-" + std::to_string(::getpid()));
  const std::string radix_src = RADIX_SOURCE_DIR "/src", radix_build = RADIX_LIB_DIR;
  // The README's line: g++ -std=c++20 -O2 my_model.cc -I"$RADIX/src" -L"$RADIX/build" -lradix
  //                    -Wl,-rpath,"$RADIX/build" -o my_model
  const std::string cmd = std::string(RADIX_CXX) + " -std=c++20 -O2 " RADIX_SOURCE_DIR "/tests/api/outside_program.cc -I\"" +
                          radix_src + "\" -L\"" + radix_build + "\" -lradix -Wl,-rpath,\"" + radix_build + "\" -o " +
                          bin.string();
  int status = 0;
  std::string log = run(cmd, &status);
  ASSERT_EQ(status, 0) << cmd << "\n" << log;
  std::string out = run(bin.string(), &status);
  std::filesystem::remove(bin);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "1 2 5 10 \n");
}

}  // namespace
