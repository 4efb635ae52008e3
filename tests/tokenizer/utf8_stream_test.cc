// Utf8Stream: only complete, valid UTF-8 comes out; invalid bytes become U+FFFD.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "radix/tokenizer/utf8_stream.h"

namespace radix::tok {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// An independent check of well-formedness (Unicode Table 3-7), by decoding codepoints.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (b < 0x80) n = 1, cp = b;
    else if ((b & 0xE0) == 0xC0) n = 2, cp = b & 0x1F;
    else if ((b & 0xF0) == 0xE0) n = 3, cp = b & 0x0F;
    else if ((b & 0xF8) == 0xF0) n = 4, cp = b & 0x07;
    else return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

TEST(Utf8Stream, EmojiSplitAcrossFourPushes) {
  Utf8Stream s;
  EXPECT_EQ(s.push("\xF0"), "");
  EXPECT_EQ(s.pending(), 1u);
  EXPECT_EQ(s.push("\x9F"), "");
  EXPECT_EQ(s.push("\x99"), "");
  EXPECT_EQ(s.push("\x82"), "\xF0\x9F\x99\x82");  // 🙂
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(s.finish(), "");
}

TEST(Utf8Stream, PassesValidTextThrough) {
  Utf8Stream s;
  EXPECT_EQ(s.push("Hello, caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC"), "Hello, caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC");
  EXPECT_EQ(s.push("ab\xE6\x97"), "ab");  // 日 is held back until complete
  EXPECT_EQ(s.push("\xA5!"), "\xE6\x97\xA5!");
  EXPECT_EQ(s.push(""), "");
  EXPECT_EQ(s.finish(), "");
}

TEST(Utf8Stream, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(Utf8Stream().push("\xFF"), kFffd);
  EXPECT_EQ(Utf8Stream().push("a\x80" "b"), "a" + kFffd + "b");  // stray continuation
  EXPECT_EQ(Utf8Stream().push("\xC0\xAF"), kFffd + kFffd);        // overlong lead
  EXPECT_EQ(Utf8Stream().push("\xE0\x80\x80"), kFffd + kFffd + kFffd);  // overlong
  EXPECT_EQ(Utf8Stream().push("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(Utf8Stream().push("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  // A truncated sequence followed by a new character: one U+FFFD for the maximal subpart.
  EXPECT_EQ(Utf8Stream().push("\xE6\x97" "x"), kFffd + "x");
  EXPECT_EQ(Utf8Stream().push("\xF0\x9F\x99\xC3\xA9"), kFffd + "\xC3\xA9");
  // Across pushes too.
  Utf8Stream s;
  EXPECT_EQ(s.push("\xE6\x97"), "");
  EXPECT_EQ(s.push("x"), kFffd + "x");
}

TEST(Utf8Stream, FinishFlushesDanglingSequence) {
  Utf8Stream s;
  EXPECT_EQ(s.push("ok\xF0\x9F"), "ok");
  EXPECT_EQ(s.finish(), kFffd);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(s.push("a"), "a");  // usable again after finish
  EXPECT_EQ(s.finish(), "");
}

TEST(Utf8Stream, ChunkingDoesNotMatter) {
  for (uint32_t seed = 0; seed < 500; ++seed) {
    std::mt19937 rng(seed);
    std::string bytes;
    const char* pieces[] = {"a", " ", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x99\x82", "\x80", "\xFF", "\xE6", "\xF0\x9F"};
    for (int n = rng() % 20; n > 0; --n) bytes += pieces[rng() % 9];
    const std::string whole = Utf8Stream::sanitize(bytes);
    ASSERT_TRUE(valid_utf8(whole)) << seed;
    if (valid_utf8(bytes)) {
      ASSERT_EQ(whole, bytes) << seed;
    }
    Utf8Stream s;
    std::string out;
    for (size_t i = 0; i < bytes.size();) {
      const size_t len = std::min<size_t>(rng() % 4, bytes.size() - i);
      const std::string got = s.push(std::string_view(bytes).substr(i, len));
      ASSERT_TRUE(valid_utf8(got)) << seed;
      out += got;
      i += len;
    }
    out += s.finish();
    ASSERT_EQ(out, whole) << seed;
  }
}

}  // namespace
}  // namespace radix::tok
