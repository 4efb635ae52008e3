// tokenizer_from_vocab: a SentencePiece-style score-merge vocabulary given as arrays
// (what GGUF embeds), with the expected merges worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "radix/tokenizer/tokenizer.h"

namespace radix::tok {
namespace {

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;
const std::string kSp = "\xE2\x96\x81";  // ▁

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::map<std::string, int32_t> id;
  void add(const std::string& t, float score, int32_t type = kNormal) {
    id.emplace(t, static_cast<int32_t>(tokens.size()));
    tokens.push_back(t);
    scores.push_back(score);
    types.push_back(type);
  }
};

// <unk> <s> </s>, the 256 byte tokens, then a handful of pieces. Merge scores (higher
// merges first): ll -1, he -2, ▁he -3, llo -3, ▁hello -3.5, wo -4, or -4, ld -4.5,
// rl -5, ▁wo -7, xy -8. Single characters score -100 (they never result from a merge).
Vocab make_vocab() {
  Vocab v;
  v.add("<unk>", 0, kUnknown);
  v.add("<s>", 0, kControl);
  v.add("</s>", 0, kControl);
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) v.add(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", 0, kByte);
  for (const char* c : {"h", "e", "l", "o", "w", "r", "d", "y"}) v.add(c, -100);
  v.add(kSp, -100);
  v.add("#", 0, kControl);  // a control token text never matches
  v.add("ll", -1);
  v.add("he", -2);
  v.add(kSp + "he", -3);
  v.add("llo", -3);
  v.add(kSp + "hello", -3.5f);
  v.add("wo", -4);
  v.add("or", -4);
  v.add("ld", -4.5f);
  v.add("rl", -5);
  v.add(kSp + "wo", -7);
  v.add("xy", -8);  // "x" alone is not a token: SentencePiece still merges it by text
  return v;
}

std::vector<int32_t> ids(const Vocab& v, const std::vector<std::string>& names) {
  std::vector<int32_t> out;
  for (const auto& n : names) out.push_back(v.id.at(n));
  return out;
}

TEST(VocabTokenizer, MergesByScoreThenLeftmost) {
  const Vocab v = make_vocab();
  auto tok = tokenizer_from_vocab(v.tokens, v.scores, v.types, 1, 2);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const Tokenizer& t = **tok;
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_EQ(t.vocab_size(), static_cast<int32_t>(v.tokens.size()));
  // "▁hello▁world" = ▁ h e l l o ▁ w o r l d. By hand:
  //   ll(-1): ▁ h e [ll] o ▁ w o r l d      he(-2): ▁ [he] ll o ...
  //   ▁he(-3) and llo(-3) tie: the leftmost (▁he) first, then llo; ▁hello(-3.5)
  //   wo(-4) and or(-4) tie: the leftmost (wo): ▁ [wo] r l d
  //   ld(-4.5) beats rl(-5): [wo] r [ld]; ▁wo(-7): [▁wo] r [ld]
  EXPECT_EQ(t.encode("hello world", true, true),
            ids(v, {"<s>", kSp + "hello", kSp + "wo", "r", "ld", "</s>"}));
  EXPECT_EQ(t.decode(t.encode("hello world", true, true)), "hello world");
  EXPECT_EQ(t.decode(t.encode("hello world", false, false)), "hello world");
  // Pieces: ▁ prints as a space, except the dummy prefix after BOS.
  EXPECT_EQ(t.piece(1, v.id.at(kSp + "hello")), "hello");
  EXPECT_EQ(t.piece(v.id.at("r"), v.id.at(kSp + "wo")), " wo");
  EXPECT_EQ(t.piece(0, 1), "");  // BOS prints nothing
  // Without "▁wo" in the picture: "world" alone is ▁ w o r l d -> ▁ wo r ld -> ▁wo r ld.
  EXPECT_EQ(t.encode("world", false, false), ids(v, {kSp + "wo", "r", "ld"}));
  EXPECT_EQ(t.encode("", true, false), ids(v, {"<s>"}));
  EXPECT_EQ(t.encode("", false, false), std::vector<int32_t>{});
}

TEST(VocabTokenizer, ByteFallbackAndUnknownCharacters) {
  const Vocab v = make_vocab();
  auto tok = tokenizer_from_vocab(v.tokens, v.scores, v.types, 1, 2);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const Tokenizer& t = **tok;
  // "hi 日": i and 日 (E6 97 A5) are not tokens -> byte tokens by name.
  EXPECT_EQ(t.encode("hi \xE6\x97\xA5", false, false),
            ids(v, {kSp, "h", "<0x69>", kSp, "<0xE6>", "<0x97>", "<0xA5>"}));
  EXPECT_EQ(t.decode(t.encode("hi \xE6\x97\xA5", true, false)), "hi \xE6\x97\xA5");
  // "x" is unknown alone but "xy" is a token: merged by text, as SentencePiece does.
  EXPECT_EQ(t.encode("xy", false, false), ids(v, {kSp, "xy"}));
  // A control token's text is never matched: "#" is byte 0x23.
  EXPECT_EQ(t.encode("#", false, false), ids(v, {kSp, "<0x23>"}));
  // Leading and doubled spaces survive the dummy-prefix rule.
  for (const std::string s : {" lead", "two  spaces ", "  ", "\xF0\x9F\x99\x82 hello", "hello\nworld\t#"})
    EXPECT_EQ(t.decode(t.encode(s, true, true)), s) << s;
}

TEST(VocabTokenizer, WithoutTypes) {
  // No token types: byte tokens found by name, BOS/EOS/<unk> still excluded from text.
  const Vocab v = make_vocab();
  auto tok = tokenizer_from_vocab(v.tokens, v.scores, {}, 1, 2);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("hello world", false, false), ids(v, {kSp + "hello", kSp + "wo", "r", "ld"}));
  EXPECT_EQ((*tok)->decode((*tok)->encode("hi \xE6\x97\xA5", true, false)), "hi \xE6\x97\xA5");
  // Through the static factory too.
  auto same = Tokenizer::from_vocab(v.tokens, v.scores, v.types, 1, 2, VocabStyle::kSentencePiece);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)->encode("hello world", true, false), (*tok)->encode("hello world", true, false));
}

TEST(VocabTokenizer, RejectsBadArrays) {
  const Vocab v = make_vocab();
  EXPECT_FALSE(tokenizer_from_vocab({}, {}, {}, -1, -1).ok());
  EXPECT_FALSE(tokenizer_from_vocab(v.tokens, {1.0f}, v.types, 1, 2).ok());       // size mismatch
  EXPECT_FALSE(tokenizer_from_vocab(v.tokens, v.scores, {1, 1}, 1, 2).ok());     // size mismatch
  EXPECT_FALSE(tokenizer_from_vocab(v.tokens, v.scores, v.types, 1, 100000).ok());  // EOS range
  EXPECT_FALSE(tokenizer_from_vocab(v.tokens, v.scores, v.types, -5, 2).ok());
  auto bad_type = v.types;
  bad_type[7] = 42;
  auto r = tokenizer_from_vocab(v.tokens, v.scores, bad_type, 1, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("token 7"), std::string::npos) << r.status().message();
  auto nan = v.scores;
  nan[270] = std::nanf("");
  r = tokenizer_from_vocab(v.tokens, nan, v.types, 1, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("token 270"), std::string::npos) << r.status().message();
  // No BOS / EOS is fine.
  auto none = tokenizer_from_vocab(v.tokens, v.scores, v.types, -1, -1);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->decode((*none)->encode("hello", true, true)), "hello");
}

}  // namespace
}  // namespace radix::tok
