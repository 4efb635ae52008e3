// llama2.c tokenizer (tok512.bin): encoding against an independent, naive reference
// written from llama2.c's run.c, byte-level round trips, streaming, corrupt files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "radix/tokenizer/tokenizer.h"
#include "radix/tokenizer/utf8_stream.h"

namespace radix::tok {
namespace {

std::string tok512_path() {
#ifdef RADIX_SOURCE_DIR
  const std::string in_repo = RADIX_SOURCE_DIR "/models/stories260K/tok512.bin";
  if (std::filesystem::exists(in_repo)) return in_repo;
#endif
  const std::string shared = "/work/shared/models/stories260K/tok512.bin";
  if (std::filesystem::exists(shared)) return shared;
  return {};
}

#define REQUIRE_TOK512(path)                                          \
  const std::string path = tok512_path();                             \
  if (path.empty()) GTEST_SKIP() << "stories260K/tok512.bin not found"

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          ("radix_tok_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

// ---- The reference: llama2.c's build_tokenizer / encode, transcribed naively. ----
struct RefVocab {
  int32_t max_len = 0;
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<size_t> ends;  // byte offset after each token (valid truncation points)
};

RefVocab ref_read(const std::string& path, int n) {
  RefVocab v;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return v;
  if (std::fread(&v.max_len, 4, 1, f) != 1) return v;
  size_t off = 4;
  for (int i = 0; i < n; ++i) {
    float s;
    int32_t len;
    if (std::fread(&s, 4, 1, f) != 1 || std::fread(&len, 4, 1, f) != 1) break;
    std::string t(len, '\0');
    if (len > 0 && std::fread(t.data(), len, 1, f) != 1) break;
    v.score.push_back(s);
    v.text.push_back(t);
    off += 8 + len;
    v.ends.push_back(off);
  }
  std::fclose(f);
  return v;
}

int ref_lookup(const RefVocab& v, const std::string& s) {  // O(vocab): deliberately naive
  for (size_t i = 0; i < v.text.size(); ++i)
    if (v.text[i] == s) return static_cast<int>(i);
  return -1;
}

std::vector<int32_t> ref_encode(const RefVocab& v, const std::string& text, bool bos, bool eos) {
  std::vector<int32_t> tokens;
  if (bos) tokens.push_back(1);
  if (!text.empty()) tokens.push_back(ref_lookup(v, " "));  // add_dummy_prefix
  std::string buf;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) buf.clear();  // a new codepoint starts
    buf.push_back(static_cast<char>(c));
    const bool next_cont = i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80;
    if (next_cont && buf.size() < 4) continue;
    const int id = ref_lookup(v, buf);
    if (id != -1) {
      tokens.push_back(id);
    } else {
      for (unsigned char b : buf) tokens.push_back(b + 3);  // byte fallback
    }
    buf.clear();
  }
  while (true) {  // merge the best consecutive pair (BOS included, as llama2.c does)
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const int id = ref_lookup(v, v.text[tokens[i]] + v.text[tokens[i + 1]]);
      if (id != -1 && v.score[id] > best_score) {
        best_score = v.score[id];
        best_id = id;
        best_idx = static_cast<int>(i);
      }
    }
    if (best_idx == -1) break;
    tokens[best_idx] = best_id;
    tokens.erase(tokens.begin() + best_idx + 1);
  }
  if (eos) tokens.push_back(2);
  return tokens;
}

std::string random_bytes(std::mt19937& rng, size_t len, int lo = 0) {
  std::uniform_int_distribution<int> byte(lo, 255), kind(0, 3);
  std::string s;
  for (size_t i = 0; i < len; ++i) {
    // Mix ASCII letters/spaces (which merge) with arbitrary bytes.
    const int k = kind(rng);
    if (k == 0) s.push_back(' ');
    else if (k == 1) s.push_back(static_cast<char>('a' + byte(rng) % 26));
    else s.push_back(static_cast<char>(byte(rng)));
  }
  return s;
}

const std::vector<std::string>& prompts() {
  static const std::vector<std::string> p = {
      "Once upon a time",
      "",
      "a",
      " ",
      "  leading and trailing spaces  ",
      "Hello, world! How are you? (fine; thanks.) \"quoted\" - dash...",
      "line one\nline two\n\nline four\ttab",
      "Lily and Ben went to the park. They saw a big, red ball!",
      "caf\xC3\xA9 na\xC3\xAFve",                      // é, ï
      "\xE6\x97\xA5\xE6\x9C\xAC",                       // 日本
      "emoji \xF0\x9F\x99\x82 and \xF0\x9F\x8E\x89!",   // 🙂 🎉
      "\xE2\x82\xAC 5 \xE2\x84\xA2",                    // € ™ (in the vocab)
      "1234567890 +-*/=<>[]{}|~\\%$#@^&_`",
      "ooo llll ppppp Mooo",  // "oo" "ll" "pp" tokens: equal-score pairs, the leftmost wins
  };
  return p;
}

TEST(Llama2cTokenizer, LoadsTok512) {
  REQUIRE_TOK512(path);
  auto tok = load_llama2c_tokenizer(path, 512);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->vocab_size(), 512);
  EXPECT_EQ((*tok)->bos(), 1);
  EXPECT_EQ((*tok)->eos(), 2);
  auto inferred = load_llama2c_tokenizer(path);  // read to the end of the file
  ASSERT_TRUE(inferred.ok()) << inferred.status().to_string();
  EXPECT_EQ((*inferred)->vocab_size(), 512);
}

TEST(Llama2cTokenizer, MatchesNaiveReference) {
  REQUIRE_TOK512(path);
  const RefVocab ref = ref_read(path, 512);
  ASSERT_EQ(ref.text.size(), 512u);
  auto tok = load_llama2c_tokenizer(path, 512);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  for (const std::string& p : prompts()) {
    for (int flags = 0; flags < 4; ++flags) {
      const bool bos = flags & 1, eos = flags & 2;
      EXPECT_EQ((*tok)->encode(p, bos, eos), ref_encode(ref, p, bos, eos))
          << "prompt '" << p << "' bos=" << bos << " eos=" << eos;
    }
    EXPECT_EQ((*tok)->decode((*tok)->encode(p, true, false)), p);
    EXPECT_EQ((*tok)->decode((*tok)->encode(p, false, true)), p);
  }
  // Worked out independently (a Python transcription of run.c): BOS " Once" " upon" " a" " time".
  EXPECT_EQ((*tok)->encode("Once upon a time", true, false),
            (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ((*tok)->piece(1, 403), "Once");  // the dummy-prefix space goes after BOS
  EXPECT_EQ((*tok)->piece(403, 407), " upon");
  EXPECT_TRUE((*tok)->encode("", false, false).empty());
  EXPECT_EQ((*tok)->encode("", true, true), (std::vector<int32_t>{1, 2}));
  // 🙂 is not in the vocabulary: four byte tokens, id = byte + 3.
  const auto emoji = (*tok)->encode("\xF0\x9F\x99\x82", false, false);
  EXPECT_EQ(emoji, (std::vector<int32_t>{ref_lookup(ref, " "), 0xF0 + 3, 0x9F + 3, 0x99 + 3, 0x82 + 3}));
}

TEST(Llama2cTokenizer, RandomTextsMatchReference) {
  REQUIRE_TOK512(path);
  const RefVocab ref = ref_read(path, 512);
  auto tok = load_llama2c_tokenizer(path, 512);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    // No NUL bytes: llama2.c's C strings end there.
    const std::string s = random_bytes(rng, rng() % 65, /*lo=*/1);
    ASSERT_EQ((*tok)->encode(s, true, false), ref_encode(ref, s, true, false)) << "case " << i;
  }
  // Runs of letters that have doubled tokens ("oo", "ll", "pp") exercise equal scores.
  for (int i = 0; i < 200; ++i) {
    std::string s;
    for (int n = rng() % 24; n > 0; --n) s.push_back(" lopt"[rng() % 5]);
    ASSERT_EQ((*tok)->encode(s, false, false), ref_encode(ref, s, false, false)) << "'" << s << "'";
  }
}

TEST(Llama2cTokenizer, EveryByteSequenceRoundTrips) {
  REQUIRE_TOK512(path);
  auto tok = load_llama2c_tokenizer(path, 512);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const Tokenizer& t = **tok;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const std::string s = random_bytes(rng, seed % 65);
    for (int flags = 0; flags < 4; ++flags) {
      const auto ids = t.encode(s, flags & 1, flags & 2);
      ASSERT_EQ(t.decode(ids), s) << "seed " << seed << " flags " << flags;
      // decode is the concatenation of pieces, each read after its predecessor.
      std::string cat;
      int32_t prev = t.bos();
      for (int32_t id : ids) cat += t.piece(prev, id), prev = id;
      ASSERT_EQ(cat, s);
    }
  }
  // Every single byte, alone and after text.
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    ASSERT_EQ(t.decode(t.encode(s, true, false)), s) << b;
    ASSERT_EQ(t.decode(t.encode("x" + s + "y", false, false)), "x" + s + "y") << b;
  }
}

TEST(Llama2cTokenizer, StreamsMultiByteCharacters) {
  REQUIRE_TOK512(path);
  auto tok = load_llama2c_tokenizer(path, 512);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::string text = "Hi \xF0\x9F\x99\x82 \xE6\x97\xA5\xE6\x9C\xAC caf\xC3\xA9";
  const auto ids = (*tok)->encode(text, true, false);
  Utf8Stream stream;
  std::string out;
  int32_t prev = ids[0];
  std::vector<std::string> emitted;
  for (size_t i = 1; i < ids.size(); ++i) {
    emitted.push_back(stream.push((*tok)->piece(prev, ids[i])));
    out += emitted.back();
    prev = ids[i];
  }
  out += stream.finish();
  EXPECT_EQ(out, text);
  for (const auto& e : emitted) EXPECT_EQ(Utf8Stream::sanitize(e), e) << "not valid UTF-8";
  // The emoji comes as 4 byte tokens: nothing, nothing, nothing, then the character.
  const size_t at = std::find(emitted.begin(), emitted.end(), "\xF0\x9F\x99\x82") - emitted.begin();
  ASSERT_LT(at, emitted.size());
  ASSERT_GE(at, 3u);
  EXPECT_EQ(emitted[at - 1], "");
  EXPECT_EQ(emitted[at - 2], "");
  EXPECT_EQ(emitted[at - 3], "");
}

TEST(Llama2cTokenizer, LongPromptIsFast) {
  REQUIRE_TOK512(path);
  auto tok = load_llama2c_tokenizer(path, 512);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::string text;
  while (text.size() < 200000)
    text += "Once upon a time, there was a little girl named Lily. She loved to play outside. ";
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = (*tok)->encode(text, true, false);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ((*tok)->decode(ids), text);
  EXPECT_LT(ids.size(), text.size() / 2);
  EXPECT_LT(s, 10.0) << "encoding 200 KB took " << s << " s";
}

// ---- Corrupt files ----

std::string patched(std::string bytes, size_t off, int32_t v) {
  std::memcpy(bytes.data() + off, &v, 4);
  return bytes;
}

TEST(Llama2cTokenizer, TruncatedFilesAreErrors) {
  REQUIRE_TOK512(path);
  const std::string bytes = read_file(path);
  const RefVocab ref = ref_read(path, 512);
  // Every cut point, parsed from memory (the same parser the file loader uses).
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    const std::string_view data(bytes.data(), cut);
    auto fixed = parse_llama2c_tokenizer(data, 512, "cut.bin");
    ASSERT_FALSE(fixed.ok()) << "cut " << cut;
    EXPECT_EQ(fixed.status().message().rfind("cut.bin", 0), 0u) << fixed.status().message();
    // Read to the end: a cut on a token boundary is a smaller valid vocabulary (from 3
    // tokens on); any other cut is an error.
    auto inferred = parse_llama2c_tokenizer(data, -1, "cut.bin");
    const auto boundary = std::find(ref.ends.begin(), ref.ends.end(), cut);
    const bool valid = boundary != ref.ends.end() && boundary - ref.ends.begin() >= 2;
    ASSERT_EQ(inferred.ok(), valid) << "cut " << cut << ": " << inferred.status().to_string();
    if (valid) {
      EXPECT_EQ((*inferred)->vocab_size(), boundary - ref.ends.begin() + 1);
      const auto ids = (*inferred)->encode("Once upon a time \xF0\x9F\x99\x82", true, true);
      for (int32_t id : ids) ASSERT_LT(id, (*inferred)->vocab_size());
    }
  }
  // Through files: the error names the file and the token.
  const std::string tmp = temp_path("trunc.bin");
  for (size_t cut : {size_t{0}, size_t{3}, size_t{4}, size_t{9}, ref.ends[99] + 5, bytes.size() - 1}) {
    write_file(tmp, bytes.substr(0, cut));
    auto r = load_llama2c_tokenizer(tmp, 512);
    ASSERT_FALSE(r.ok()) << "cut " << cut;
    EXPECT_NE(r.status().message().find(tmp), std::string::npos) << r.status().message();
  }
  write_file(tmp, bytes.substr(0, ref.ends[99] + 5));
  auto r = load_llama2c_tokenizer(tmp, 512);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("token 100"), std::string::npos) << r.status().message();
  std::filesystem::remove(tmp);
}

TEST(Llama2cTokenizer, CorruptFieldsAreErrors) {
  REQUIRE_TOK512(path);
  const std::string bytes = read_file(path);
  const RefVocab ref = ref_read(path, 512);
  const std::string tmp = temp_path("corrupt.bin");
  const size_t tok5 = ref.ends[4];  // token 5's score, then its length at +4
  struct Case {
    std::string name, bytes, expect;
  };
  const float nan = std::nanf("");
  int32_t nan_bits;
  std::memcpy(&nan_bits, &nan, 4);
  const std::vector<Case> cases = {
      {"negative length", patched(bytes, tok5 + 4, -1), "token 5"},
      {"huge length", patched(bytes, tok5 + 4, 0x7fffffff), "token 5"},
      {"length past the end", patched(bytes, ref.ends[510] + 4, 7), "token 511"},
      {"length over max", patched(bytes, tok5 + 4, ref.max_len + 1), "token 5"},
      {"NaN score", patched(bytes, tok5, nan_bits), "NaN"},
      {"huge max_token_length", patched(bytes, 0, 0x7fffffff), "max_token_length"},
      {"zero max_token_length", patched(bytes, 0, 0), "max_token_length"},
      {"negative max_token_length", patched(bytes, 0, -4), "max_token_length"},
  };
  for (const Case& c : cases) {
    write_file(tmp, c.bytes);
    for (int32_t n : {512, -1}) {
      auto r = load_llama2c_tokenizer(tmp, n);
      ASSERT_FALSE(r.ok()) << c.name;
      EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
          << c.name << ": " << r.status().message();
      EXPECT_NE(r.status().message().find(tmp), std::string::npos) << r.status().message();
    }
  }
  // More tokens than the file holds; too few for BOS/EOS; a missing file.
  auto more = load_llama2c_tokenizer(path, 600);
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("token 512"), std::string::npos) << more.status().message();
  EXPECT_FALSE(load_llama2c_tokenizer(path, 2).ok());
  EXPECT_FALSE(load_llama2c_tokenizer(path, 0x7fffffff).ok());
  auto missing = load_llama2c_tokenizer(temp_path("does_not_exist.bin"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kIoError);
  // A smaller vocab_size than the file holds reads that many tokens (llama2.c does).
  auto fewer = load_llama2c_tokenizer(path, 300);
  ASSERT_TRUE(fewer.ok()) << fewer.status().to_string();
  EXPECT_EQ((*fewer)->vocab_size(), 300);
  EXPECT_EQ((*fewer)->decode((*fewer)->encode("Once upon a time", true, true)), "Once upon a time");
  std::filesystem::remove(tmp);
}

TEST(Llama2cTokenizer, RandomCorruptionNeverCrashes) {
  REQUIRE_TOK512(path);
  const std::string bytes = read_file(path);
  std::mt19937 rng(123);
  int loaded = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string b = bytes;
    for (int k = 1 + rng() % 4; k > 0; --k) b[rng() % b.size()] = static_cast<char>(rng());
    for (int32_t n : {512, -1}) {
      auto r = parse_llama2c_tokenizer(b, n, "fuzz");
      if (!r.ok()) continue;
      ++loaded;
      const Tokenizer& t = **r;
      const std::string text = random_bytes(rng, rng() % 40);
      const auto ids = t.encode(text, true, true);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < t.vocab_size());
      t.decode(ids);
    }
  }
  EXPECT_GT(loaded, 0);  // most flips land in token text and scores: still loadable
}

}  // namespace
}  // namespace radix::tok
