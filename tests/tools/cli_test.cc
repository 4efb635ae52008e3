// The `radix` command-line tool, run as a subprocess.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
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
  EXPECT_NE(r.out.find("define void @_radix_packed_main"), std::string::npos);
  EXPECT_NE(r.out.find("[radix cpu] stage codegen"), std::string::npos);
  EXPECT_NE(r.out.find("[radix cpu] stage bufferize"), std::string::npos);
}

// CUDA without a device: compile-only writes the kernels' PTX; running says
// there is no CUDA device (exit 1, no crash). With a GPU the run works.
TEST(Cli, CudaCompileOnlyWritesPtxAndRunningNeedsADevice) {
  const std::string dir = ::testing::TempDir() + "radix_cli_cuda_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  CliRun c = run("example --platform cuda --compile-only --target sm_80 --batch 4 --dump-dir " + dir);
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("compiled for cuda (sm_80)"), std::string::npos) << c.out;
  int ptx = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().extension() == ".ptx") {
      ++ptx;
      EXPECT_NE(c.out.find(e.path().filename().string()), std::string::npos) << "listed: " << e.path();
    }
  EXPECT_GE(ptx, 3) << c.out;
  CliRun r = run("example --platform cuda --iters 1");
  if (r.code == 0) {
    EXPECT_NE(r.out.find(": OK"), std::string::npos) << r.out;  // a GPU is here: it ran and checked
  } else {
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("no CUDA device"), std::string::npos) << r.out;
  }
  CliRun bad = run("example --platform cuda --compile-only --target sm_x");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("sm_x"), std::string::npos) << bad.out;
  CliRun unknown = run("example --platform tpu");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("registered: cpu, cuda"), std::string::npos) << unknown.out;
  std::filesystem::remove_all(dir);
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


// The on-disk executable cache across processes: the second run of the same
// program loads the stored object and compiles nothing (no pipeline stage
// runs: --verbose prints none), and damaged entries are recompiled.
class CliCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "radix-cli-cache-" + std::to_string(::getpid());
    std::string rm = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(rm.c_str()), 0);
  }
  void TearDown() override {
    std::string rm = "rm -rf '" + dir_ + "'";
    (void)std::system(rm.c_str());
  }
  CliRun example(const std::string& extra = "") {
    return run("example --batch 2 --layers 1 --iters 1 --cache-dir '" + dir_ + "' " + extra);
  }
  // The one entry file in the cache folder.
  std::string entry() {
    CliRun ls = {0, ""};
    FILE* p = popen(("ls '" + dir_ + "'/*.rxc").c_str(), "r");
    std::array<char, 512> buf;
    while (size_t n = fread(buf.data(), 1, buf.size(), p)) ls.out.append(buf.data(), n);
    pclose(p);
    while (!ls.out.empty() && ls.out.back() == '\n') ls.out.pop_back();
    return ls.out;
  }
  // Runs `cmd` on the entry file (e.g. a dd that damages it).
  void damage(const std::string& cmd) {
    std::string full = cmd + " '" + entry() + "' 2>/dev/null";
    ASSERT_EQ(std::system(full.c_str()), 0) << full;
  }
  std::string dir_;
};

TEST_F(CliCache, MissThenHitInASecondProcessWithoutCompiling) {
  CliRun first = example();
  ASSERT_EQ(first.code, 0) << first.out;
  EXPECT_NE(first.out.find("cache: miss"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find(": OK"), std::string::npos) << first.out;
  CliRun second = example("--verbose");
  ASSERT_EQ(second.code, 0) << second.out;
  EXPECT_NE(second.out.find("cache: hit, loaded in "), std::string::npos) << second.out;
  EXPECT_EQ(second.out.find("stage "), std::string::npos) << "a cache hit must not run the pipeline:\n" << second.out;
  EXPECT_NE(second.out.find(": OK"), std::string::npos) << second.out;
  // Other code-generating options are another program: a miss.
  CliRun other = example("--opt-level 1");
  EXPECT_NE(other.out.find("cache: miss"), std::string::npos) << other.out;
  // Diagnostics are not: still a hit.
  CliRun dumped = example("--dump traced");
  EXPECT_NE(dumped.out.find("cache: hit"), std::string::npos) << dumped.out;
}

TEST_F(CliCache, CorruptTruncatedAndOtherVersionEntriesAreRecompiled) {
  const char* damages[] = {
      // one payload byte flipped (the checksum catches it)
      "f() { printf '\\x5a' | dd of=\"$1\" bs=1 seek=100 conv=notrunc; }; f",
      // cut short
      "f() { truncate -s 60 \"$1\"; }; f",
      // another format version in the header (bytes 8..11)
      "f() { printf '\\x63\\x00\\x00\\x00' | dd of=\"$1\" bs=1 seek=8 conv=notrunc; }; f",
  };
  ASSERT_EQ(example().code, 0);
  for (const char* d : damages) {
    damage(d);
    CliRun r = example("--verbose");
    ASSERT_EQ(r.code, 0) << d << "\n" << r.out;
    EXPECT_NE(r.out.find("cache entry rejected"), std::string::npos) << d << "\n" << r.out;
    EXPECT_NE(r.out.find("cache: rejected, compiled and stored"), std::string::npos) << d << "\n" << r.out;
    EXPECT_NE(r.out.find(": OK"), std::string::npos) << r.out;
    CliRun again = example();
    EXPECT_NE(again.out.find("cache: hit"), std::string::npos) << d << "\n" << again.out;
  }
}

}  // namespace

namespace {

const std::string kStories = std::string(RADIX_SOURCE_DIR) + "/models/stories260K/stories260K.bin";

// The generated text of a run: without the compile notes ("[radix cpu]
// compiled ..." on stderr when a compile takes over a second) and the
// timing line.
std::string text(const std::string& out) {
  std::string t = std::regex_replace(out, std::regex(R"(\[radix cpu\][^\n]*\n)"), "");
  return t.substr(0, t.find("load "));
}

// The README's main job: stories260K, greedy, from the repository's copy.
TEST(CliGenerate, GreedyStoryAndTimingLine) {
  CliRun r = run("generate --model '" + kStories + "' --temperature 0 --steps 30 --cache-dir '" +
                 std::string(RADIX_TEST_CACHE_DIR) + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Once upon a time, there was a little girl named Lily."), std::string::npos) << r.out;
  // "load 2 ms, compile 840 ms (cache miss), prefill 1 tokens 9100 tok/s, decode 29 tokens 7400 tok/s"
  std::regex line(R"(load \d+ ms, compile \d+ ms \(cache (miss|hit|rejected)\), prefill 1 tokens \d+ tok/s, decode 29 tokens \d+ tok/s)");
  EXPECT_TRUE(std::regex_search(r.out, line)) << r.out;
}

// bf16 and int8 weights on one thread: the same greedy opening as f32
// (stories260K's greedy choices are far from ties), and a bad dtype exits 2
// naming it.
TEST(CliGenerate, Bf16WeightsAndThreads) {
  CliRun r = run("generate --model '" + kStories + "' --temperature 0 --steps 30 --weights bf16 --threads 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Once upon a time, there was a little girl named Lily."), std::string::npos) << r.out;
  // int8 weights keep the greedy opening too; the block formats name why
  // they refuse stories260K's 172-wide feed-forward.
  // (int8 activations, the default, and f32 ones).
  for (const char* acts : {"", " --activations f32"}) {
    CliRun q = run("generate --model '" + kStories + "' --temperature 0 --steps 30 --weights int8 --threads 1" + acts);
    ASSERT_EQ(q.code, 0) << q.out;
    EXPECT_NE(q.out.find("Once upon a time, there was a little girl named Lily."), std::string::npos) << q.out;
  }
  CliRun bad_acts = run("generate --model '" + kStories + "' --weights int8 --activations f16");
  EXPECT_EQ(bad_acts.code, 2);
  EXPECT_NE(bad_acts.out.find("--activations needs int8 or f32, got 'f16'"), std::string::npos) << bad_acts.out;
  CliRun q8 = run("generate --model '" + kStories + "' --weights q8_0");
  EXPECT_EQ(q8.code, 1);
  EXPECT_NE(q8.out.find("need dim and hidden_dim multiples of 32"), std::string::npos) << q8.out;
  CliRun bad = run("generate --model '" + kStories + "' --weights q3");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--weights needs f32, bf16, f16, int8, q8_0 or q4_0, got 'q3'"), std::string::npos) << bad.out;
}

TEST(CliGenerate, PromptSeedsAndSampling) {
  const std::string base = "generate --model '" + kStories + "' --steps 40 --prompt 'The cat' --cache-dir '" +
                           std::string(RADIX_TEST_CACHE_DIR) + "'";
  CliRun a = run(base + " --temperature 0.8 --top-p 0.9 --seed 7");
  CliRun b = run(base + " --temperature 0.8 --top-p 0.9 --seed 7");
  CliRun c = run(base + " --temperature 0.8 --top-p 0.9 --seed 8");
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_EQ(text(a.out).rfind("The cat", 0), 0u) << a.out;
  EXPECT_EQ(text(a.out), text(b.out)) << "the same seed writes the same text";
  EXPECT_NE(text(a.out), text(c.out)) << "another seed writes another text";
  EXPECT_TRUE(std::regex_search(a.out, std::regex(R"(prefill [2-9] tokens)"))) << a.out;  // BOS + the prompt's
}

TEST(CliGenerate, HelpAndBadInput) {
  CliRun h = run("generate --help");
  EXPECT_EQ(h.code, 0);
  for (const char* flag : {"--model", "--tokenizer", "--prompt", "--steps", "--temperature", "--top-p", "--top-k",
                           "--seed", "--cache-dir", "--weights", "--threads", "--verbose"})
    EXPECT_NE(h.out.find(flag), std::string::npos) << flag;
  CliRun ex = run("example --help");
  EXPECT_EQ(ex.code, 0);
  EXPECT_NE(ex.out.find("--cache-dir"), std::string::npos);
  CliRun cv = run("convert --help");
  EXPECT_EQ(cv.code, 0);
  EXPECT_NE(cv.out.find("OUT.safetensors"), std::string::npos);
  CliRun top = run("--help");
  EXPECT_NE(top.out.find("generate"), std::string::npos);
  EXPECT_NE(top.out.find("convert"), std::string::npos);
  CliRun missing = run("generate --model /nonexistent/model.bin");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("/nonexistent/model.bin"), std::string::npos) << missing.out;
  CliRun bad = run("generate --model '" + kStories + "' --temperature -1");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--temperature needs a number"), std::string::npos) << bad.out;
  CliRun no_model = run("generate --steps 3");
  EXPECT_EQ(no_model.code, 2);
  EXPECT_NE(no_model.out.find("--model PATH is required"), std::string::npos) << no_model.out;
}

TEST(CliConvert, WritesSafetensorsThatGenerateTheSame) {
  const std::string out = ::testing::TempDir() + "radix-cli-convert-" + std::to_string(::getpid()) + ".safetensors";
  CliRun c = run("convert '" + kStories + "' '" + out + "'");
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("wrote 48 tensors"), std::string::npos) << c.out;
  const std::string tok = " --tokenizer '" + std::string(RADIX_SOURCE_DIR) + "/models/stories260K/tok512.bin'";
  const std::string flags = " --temperature 0 --steps 20 --cache-dir '" + std::string(RADIX_TEST_CACHE_DIR) + "'";
  CliRun a = run("generate --model '" + kStories + "'" + flags);
  CliRun b = run("generate --model '" + out + "'" + tok + flags);
  std::remove(out.c_str());
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(text(a.out), text(b.out));
  CliRun usage = run("convert onlyone");
  EXPECT_EQ(usage.code, 2);
}

}  // namespace

namespace radix {
namespace {
// radix bench checks every contender against a reference before timing it;
// a smoke run of two cases on 1 and 2 threads exits 0 with both tables, and
// names the OpenBLAS kernel it compared against.
TEST(CliBench, QuickRunChecksAndPrintsRatios) {
  CliRun r = run("bench --quick --threads 1,2 --filter matvec --repetitions 1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("OpenBLAS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| matvec decode"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("radix/read"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  r = run("bench --quick --threads 1 --filter rmsnorm --repetitions 1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("| rmsnorm"), std::string::npos) << r.out;
}

// --target-cpu compiles Radix's side for another CPU this host runs: the AVX2
// schedule (x86-64-v3: AVX2 + FMA) checked and timed against the peers, held
// to AVX2 on an AVX-512 host. Unknown CPUs, and CPUs with instructions this
// host lacks, are refused before anything runs.
TEST(CliBench, TargetCpuCompilesForThatCpu) {
  CliRun bad = run("bench --quick --filter \"matmul 256\" --target-cpu pentium-9000");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("unknown CPU 'pentium-9000'"), std::string::npos) << bad.out;
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "host without AVX2 + FMA";
  CliRun r = run("bench --quick --threads 1 --filter \"matmul 256\" --repetitions 1 --target-cpu x86-64-v3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Radix compiled for x86-64-v3 (--target-cpu: its schedule takes 8 f32 lanes x 16 registers)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| matmul 256^3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_NE(r.out.find("OpenBLAS: Haswell kernel"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("oneDNN held to DNNL_MAX_CPU_ISA=AVX2"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("WARNING"), std::string::npos) << r.out;
  }
#endif
}

// llama.cpp is an optional peer: the help names the option and the script
// that builds it. --write-models writes the bf16, Q8_0 and Q4_0 GGUFs (those
// rows' llama.cpp models) beside the F32 one, each read back by Radix's GGUF
// loader. (Nothing here needs llama.cpp itself.)
TEST(CliBench, HelpListsTheLlamaCppPeer) {
  CliRun r = run("bench --help");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--llama-bench PATH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scripts/build-llama-cpp.sh"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-bf16.gguf"), std::string::npos) << r.out;
}

TEST(CliBench, WriteModelsWritesF32Bf16AndQuantizedGguf) {
  char tmpl[] = "/tmp/radix-cli-write-models-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  CliRun r = run("bench --quick --write-models " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* file : {"stories15M-random.safetensors", "stories15M-random.gguf", "stories15M-random-bf16.gguf",
                           "stories15M-random-q8_0.gguf", "stories15M-random-q4_0.gguf", "stories15M-random.bin"})
    EXPECT_NE(r.out.find("wrote " + dir + "/" + file), std::string::npos) << file << "\n" << r.out;
  EXPECT_NE(r.out.find("BF16 matrices"), std::string::npos) << r.out;
  std::error_code ec;
  const auto f32_size = std::filesystem::file_size(dir + "/stories15M-random.gguf", ec);
  EXPECT_LT(std::filesystem::file_size(dir + "/stories15M-random-bf16.gguf", ec), f32_size * 6 / 10);
  // Blocks of 32: 34 bytes (Q8_0), 18 (Q4_0) against 128 in f32; norms and header aside.
  EXPECT_LT(std::filesystem::file_size(dir + "/stories15M-random-q8_0.gguf", ec), f32_size * 30 / 100);
  EXPECT_LT(std::filesystem::file_size(dir + "/stories15M-random-q4_0.gguf", ec), f32_size * 16 / 100);
  std::filesystem::remove_all(dir, ec);
}

// The quantized LLM rows run the generator with Q4_0 weights kept packed:
// prefill checked against as many decode steps (int8-rounded activations
// there), then timed against the roofline of the quantized bytes.
TEST(CliBench, QuantizedLlmRowsCheckAndPrint) {
  CliRun r = run("bench --quick --threads 1 --filter \"stories15M q4_0\" --llama-bench none --repetitions 1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("| llm stories15M q4_0 prefill 32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| llm stories15M q4_0 decode 16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("q4_0 (tied classifier)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
}

TEST(CliBench, BadOptionsExit2) {
  // Each message names the option and the value it refused.
  const std::pair<const char*, const char*> cases[] = {{"bench --threads 0", "--threads"},
                                                       {"bench --threads x", "'x'"},
                                                       {"bench --repetitions 0", "--repetitions"},
                                                       {"bench --bogus", "unknown option '--bogus'"},
                                                       {"bench --filter no-such-case", "'no-such-case'"},
                                                       {"bench --llama-bench /no/such/llama-bench",
                                                        "--llama-bench: no executable file at '/no/such/llama-bench'"},
                                                       {"bench --llama-bench", "--llama-bench needs"}};
  for (const auto& [args, names] : cases) {
    CliRun r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(std::string("radix bench: ")), std::string::npos) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(names), std::string::npos) << args << "\n" << r.out;
  }
}
}  // namespace
}  // namespace radix
