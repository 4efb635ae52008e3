// The profiler's trace file, read back with a small JSON reader: valid JSON,
// complete ("X") events with non-negative times, and the named spans (cache
// lookup / load / store included) for
// tracing, every pipeline stage, LLVM code generation and each execution.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <variant>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

// A minimal JSON value and recursive-descent reader (objects, arrays,
// strings with escapes, numbers, true / false / null): enough to check the
// file is well-formed and to read the events back.
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>, std::map<std::string, Json>> v;
};
struct Reader {
  const std::string& s;
  size_t i = 0;
  void ws() { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; }
  [[noreturn]] void bad(const char* what) { throw std::runtime_error(std::string(what) + " at byte " + std::to_string(i)); }
  std::string str() {
    if (s[i] != '"') bad("expected a string");
    std::string out;
    for (++i; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\') {
        if (++i >= s.size()) bad("bad escape");
        if (s[i] == 'u') { out += '?'; i += 4; continue; }
        out += s[i] == 'n' ? '\n' : s[i];
      } else {
        out += s[i];
      }
    }
    if (i >= s.size()) bad("unterminated string");
    ++i;
    return out;
  }
  Json value() {
    ws();
    if (i >= s.size()) bad("unexpected end");
    const char c = s[i];
    if (c == '{') {
      std::map<std::string, Json> m;
      ++i;
      ws();
      if (s[i] == '}') { ++i; return {m}; }
      for (;;) {
        ws();
        std::string k = str();
        ws();
        if (s[i++] != ':') bad("expected ':'");
        m[k] = value();
        ws();
        if (s[i] == ',') { ++i; continue; }
        if (s[i++] != '}') bad("expected '}'");
        return {m};
      }
    }
    if (c == '[') {
      std::vector<Json> a;
      ++i;
      ws();
      if (s[i] == ']') { ++i; return {a}; }
      for (;;) {
        a.push_back(value());
        ws();
        if (s[i] == ',') { ++i; continue; }
        if (s[i++] != ']') bad("expected ']'");
        return {a};
      }
    }
    if (c == '"') return {str()};
    if (s.compare(i, 4, "true") == 0) { i += 4; return {true}; }
    if (s.compare(i, 5, "false") == 0) { i += 5; return {false}; }
    if (s.compare(i, 4, "null") == 0) { i += 4; return {nullptr}; }
    size_t used = 0;
    double d = std::stod(s.substr(i, 40), &used);
    if (used == 0) bad("bad number");
    i += used;
    return {d};
  }
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Profiler, WritesNamedSpansAsTraceEventJson) {
  const auto path = std::filesystem::temp_directory_path() / ("radix-profile-" + std::to_string(::getpid()) + ".json");
  Profiler::start(path.string());
  EXPECT_TRUE(Profiler::enabled());
  const Shape s(DType::kF32, {16});
  CompileFnOptions o;
  o.trace.name = "profiled";
  const auto cache = std::filesystem::temp_directory_path() / ("radix-profile-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(cache);
  o.compile.cache_dir = cache.string();
  auto fn = [](Tensor x) { return exp(x) * 2.0; };
  auto exe = must(compile_fn(cpu(), o, fn, s));  // a cache miss: compiled and stored
  (void)must(compile_fn(cpu(), o, fn, s));        // a hit: loaded, no stage runs
  std::filesystem::remove_all(cache);
  Buffer x = must(cpu().buffer(s, std::vector<float>(16, 1.f)));
  for (int i = 0; i < 3; ++i) (void)must(exe.call(x));
  ASSERT_TRUE(Profiler::stop().ok());
  EXPECT_FALSE(Profiler::enabled());

  const std::string text = slurp(path);
  std::filesystem::remove(path);
  Reader r{text};
  Json root = r.value();
  r.ws();
  ASSERT_EQ(r.i, text.size()) << "trailing bytes after the JSON value";
  auto& events = std::get<std::vector<Json>>(std::get<std::map<std::string, Json>>(root.v).at("traceEvents").v);
  std::map<std::string, int> names;
  for (Json& e : events) {
    auto& m = std::get<std::map<std::string, Json>>(e.v);
    EXPECT_EQ(std::get<std::string>(m.at("ph").v), "X");
    EXPECT_GE(std::get<double>(m.at("ts").v), 0);
    EXPECT_GE(std::get<double>(m.at("dur").v), 0);
    (void)std::get<double>(m.at("pid").v);
    (void)std::get<double>(m.at("tid").v);
    const std::string name = std::get<std::string>(m.at("name").v);
    names[name.substr(0, name.find(' ', name.find(' ') + 1))]++;  // first two words
    names[name.substr(0, name.find(' '))]++;
  }
  EXPECT_EQ(names["trace profiled"], 2);
  EXPECT_EQ(names["compile profiled"], 2);
  EXPECT_EQ(names["cache lookup"], 2);
  EXPECT_EQ(names["cache store"], 1);
  EXPECT_EQ(names["cache load"], 1);
  for (const char* st : {"stage dps", "stage fuse", "stage schedule", "stage bufferize", "stage math", "stage lower"})
    EXPECT_EQ(names[st], 1) << st;
  EXPECT_EQ(names["llvm codegen"], 1);
  EXPECT_EQ(names["execute"], 3);
}

TEST(Profiler, OffByDefaultAndUnwritablePathIsAnError) {
  EXPECT_FALSE(Profiler::enabled());
  { Profiler::Span ignored("nothing", "test"); }
  EXPECT_EQ(Profiler::span_count(), 0u);
  Profiler::start("/nonexistent-dir/radix/profile.json");
  { Profiler::Span one("one", "test"); }
  EXPECT_EQ(Profiler::span_count(), 1u);
  Status s = Profiler::stop();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kIoError);
  EXPECT_NE(s.message().find("/nonexistent-dir/radix/profile.json"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace radix
