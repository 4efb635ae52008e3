// The `radix` command-line tool, run as a subprocess.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct CliRun {
  int code;
  std::string out;  // stdout and stderr together
};

CliRun run(const std::string& args) {
  std::string cmd = std::string(RADIX_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

TEST(Cli, ExampleRunsAndChecksItself) {
  CliRun r = run("example --batch 3 --in 10 --hidden 12 --layers 1 --out 5 --iters 3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("MLP 10 -> 12 -> 12 -> 5, batch 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output    f32[b=3,d=5]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compile "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("median of 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": OK"), std::string::npos) << r.out;
}

TEST(Cli, DumpsStagesAndVerboseTimings) {
  CliRun r = run("example --batch 2 --layers 0 --iters 0 --dump traced,llvm-ir --verbose");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("radix stage: traced"), std::string::npos);
  EXPECT_NE(r.out.find("func.func @main"), std::string::npos);
  EXPECT_NE(r.out.find("radix stage: llvm-ir"), std::string::npos);
  EXPECT_NE(r.out.find("define void @_mlir_ciface_main"), std::string::npos);
  EXPECT_NE(r.out.find("[radix cpu] stage bufferize"), std::string::npos);
}

TEST(Cli, ProfileWritesATraceFile) {
  const std::string path = "/tmp/radix-cli-profile-" + std::to_string(::getpid()) + ".json";
  CliRun r = run("example --batch 2 --layers 1 --iters 2 --profile " + path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("profile   " + path), std::string::npos) << r.out;
  FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), f)) text.append(buf.data(), n);
  std::fclose(f);
  std::remove(path.c_str());
  EXPECT_EQ(text.rfind("{\"traceEvents\": [", 0), 0u) << text.substr(0, 80);
  for (const char* span : {"\"trace mlp\"", "\"stage lower\"", "\"llvm codegen\"", "\"execute "})
    EXPECT_NE(text.find(span), std::string::npos) << span;
  EXPECT_EQ(run("example --profile").code, 2);
}

TEST(Cli, BadInputGetsAClearErrorAndExitCode2) {
  CliRun r = run("example --batch 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--batch needs an integer >= 1, got '0'"), std::string::npos) << r.out;
  r = run("example --dump nonsense");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown stage 'nonsense'"), std::string::npos) << r.out;
  r = run("example --frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown option '--frobnicate'"), std::string::npos) << r.out;
  r = run("transmogrify");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown command 'transmogrify'"), std::string::npos) << r.out;
  r = run("help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: radix"), std::string::npos);
}

}  // namespace
