#include "radix/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <utility>

namespace radix::tok {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space
// llama2.c's merge loop starts from best_score = -1e10 and takes a pair only when its
// score is strictly greater, so tokens scored at or below -1e10 never merge.
constexpr float kLlama2cMinScore = -1e10f;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "<0xHH>" -> HH, else -1.
int parse_byte_token(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  const int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

// llama.cpp's UTF-8 length from the lead byte's high nibble (continuation bytes and
// invalid leads count as one byte).
size_t utf8_len(uint8_t lead) {
  static const uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(std::vector<std::string> tokens,
                                                            std::vector<float> scores,
                                                            std::vector<int32_t> types,
                                                            int32_t bos, int32_t eos,
                                                            VocabStyle style,
                                                            const std::string& what) {
  const size_t n = tokens.size();
  if (n == 0) return invalid_argument(what + ": the vocabulary is empty");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return invalid_argument(what + ": " + std::to_string(n) + " tokens do not fit int32 ids");
  if (!scores.empty() && scores.size() != n)
    return invalid_argument(what + ": " + std::to_string(scores.size()) + " scores for " +
                            std::to_string(n) + " tokens");
  if (!types.empty() && types.size() != n)
    return invalid_argument(what + ": " + std::to_string(types.size()) + " token types for " +
                            std::to_string(n) + " tokens");
  for (size_t i = 0; i < scores.size(); ++i)
    if (std::isnan(scores[i]))
      return invalid_argument(what + ": token " + std::to_string(i) + ": score is NaN");
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] < 0 || types[i] > static_cast<int32_t>(TokenType::kByte))
      return invalid_argument(what + ": token " + std::to_string(i) + ": unknown token type " +
                              std::to_string(types[i]));
  const auto id_ok = [n](int32_t id) { return id >= -1 && id < static_cast<int64_t>(n); };
  if (!id_ok(bos)) return invalid_argument(what + ": BOS id " + std::to_string(bos) + " out of range");
  if (!id_ok(eos)) return invalid_argument(what + ": EOS id " + std::to_string(eos) + " out of range");

  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
  t->tokens_ = std::move(tokens);
  t->scores_ = scores.empty() ? std::vector<float>(n, 0.0f) : std::move(scores);
  t->types_.resize(n, TokenType::kNormal);
  for (size_t i = 0; i < types.size(); ++i) t->types_[i] = static_cast<TokenType>(types[i]);
  const bool typed = !types.empty();
  t->style_ = style;
  t->bos_ = bos;
  t->eos_ = eos;

  // Byte tokens, by name ("<0x41>"; with types given only kByte tokens).
  t->byte_id_.fill(-1);
  t->byte_value_.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (typed && t->types_[i] != TokenType::kByte) continue;
    const int b = parse_byte_token(t->tokens_[i]);
    if (b < 0) continue;
    t->byte_value_[i] = static_cast<int16_t>(b);
    if (t->byte_id_[b] < 0) t->byte_id_[b] = static_cast<int32_t>(i);
  }
  if (style == VocabStyle::kLlama2c) {
    // llama2.c hard-codes byte b as token b + 3; use it where the name is not found.
    for (int b = 0; b < 256; ++b)
      if (t->byte_id_[b] < 0 && static_cast<size_t>(b + 3) < n) t->byte_id_[b] = b + 3;
  }

  // The unknown token: by type, else "<unk>" (llama2.c: token 0).
  for (size_t i = 0; i < n && t->unk_ < 0; ++i)
    if (t->types_[i] == TokenType::kUnknown) t->unk_ = static_cast<int32_t>(i);
  for (size_t i = 0; i < n && t->unk_ < 0; ++i)
    if (t->tokens_[i] == "<unk>") t->unk_ = static_cast<int32_t>(i);

  // The text -> id map of tokens that text can match; the first of duplicates wins.
  t->lookup_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    if (style == VocabStyle::kSentencePiece) {
      const TokenType ty = t->types_[i];
      if (ty == TokenType::kControl || ty == TokenType::kUnknown || ty == TokenType::kUnused ||
          ty == TokenType::kByte)
        continue;
      if (!typed && (id == bos || id == eos || id == t->unk_ || t->byte_value_[i] >= 0)) continue;
    }
    if (t->tokens_[i].empty()) continue;
    t->lookup_.emplace(t->tokens_[i], id);
  }
  if (style == VocabStyle::kLlama2c) {
    t->space_id_ = t->lookup(" ");
    // llama2.c always prepends the " " token; a vocabulary without one gets no prefix.
    t->dummy_prefix_ = t->space_id_ >= 0;
  }
  return t;
}

Result<std::unique_ptr<Tokenizer>> tokenizer_from_vocab(std::vector<std::string> tokens,
                                                        std::vector<float> scores,
                                                        std::vector<int32_t> types, int32_t bos,
                                                        int32_t eos, VocabStyle style) {
  RADIX_ASSIGN_OR_RETURN(auto t, BpeTokenizer::create(std::move(tokens), std::move(scores),
                                                      std::move(types), bos, eos, style));
  return std::unique_ptr<Tokenizer>(std::move(t));
}

int32_t BpeTokenizer::lookup(std::string_view text) const {
  const auto it = lookup_.find(text);
  return it == lookup_.end() ? -1 : it->second;
}

// -1 when there is neither a byte token nor <unk>: the byte cannot be represented.
int32_t BpeTokenizer::byte_or_unk(uint8_t b) const { return byte_id_[b] >= 0 ? byte_id_[b] : unk_; }

// llama2.c's encode: the " " token first (the dummy prefix), then each UTF-8 character:
// a byte that is not a continuation byte starts one, continuation bytes join it up to
// 4 bytes in all. A character that is not a token becomes its byte tokens.
void BpeTokenizer::split_llama2c(std::string_view text, std::vector<Symbol>& syms) const {
  if (text.empty()) return;
  if (space_id_ >= 0) syms.push_back({tokens_[space_id_], space_id_, -1, -1, true});
  for (size_t i = 0; i < text.size();) {
    size_t j = i + 1;
    while (j < text.size() && j - i < 4 && (static_cast<uint8_t>(text[j]) & 0xC0) == 0x80) ++j;
    const std::string_view ch = text.substr(i, j - i);
    const int32_t id = lookup(ch);
    if (id >= 0) {
      syms.push_back({tokens_[id], id, -1, -1, true});
    } else {
      for (char c : ch) {
        const int32_t b = byte_or_unk(static_cast<uint8_t>(c));
        if (b >= 0) syms.push_back({tokens_[b], b, -1, -1, true});
      }
    }
    i = j;
  }
}

// SentencePiece (llama.cpp's SPM tokenizer): spaces become "▁" and "▁" goes first; the
// characters stay raw text, merge by text, and only those left unknown become bytes.
void BpeTokenizer::split_sentencepiece(std::string_view text, std::vector<Symbol>& syms) const {
  for (size_t i = 0; i < text.size();) {
    const size_t len = std::min(utf8_len(static_cast<uint8_t>(text[i])), text.size() - i);
    const std::string_view ch = text.substr(i, len);
    syms.push_back({ch, lookup(ch), -1, -1, true});
    i += len;
  }
}

void BpeTokenizer::merge(std::vector<Symbol>& syms) const {
  const auto count = static_cast<int32_t>(syms.size());
  for (int32_t i = 0; i < count; ++i) {
    syms[i].prev = i - 1;
    syms[i].next = i + 1 < count ? i + 1 : -1;
  }
  struct Candidate {
    float score;
    int32_t left, right, id;
    size_t left_len, right_len;  // the symbols' sizes when queued: stale if they changed
  };
  // Highest score first; among equal scores the leftmost pair (the original index order
  // of the left symbol is the current order, since a merge keeps the left index).
  const auto lower = [](const Candidate& a, const Candidate& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower)> queue(lower);
  std::string buf;
  const auto try_pair = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    buf.assign(syms[l].text);
    buf.append(syms[r].text);
    const int32_t id = lookup(buf);
    if (id < 0) return;
    const float s = scores_[id];
    if (style_ == VocabStyle::kLlama2c && !(s > kLlama2cMinScore)) return;
    queue.push({s, l, r, id, syms[l].text.size(), syms[r].text.size()});
  };
  for (int32_t i = 0; i + 1 < count; ++i) try_pair(i, i + 1);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = syms[c.left];
    Symbol& r = syms[c.right];
    if (!l.alive || !r.alive || l.next != c.right || l.text.size() != c.left_len ||
        r.text.size() != c.right_len)
      continue;  // stale: one side merged since
    // The merged text is exactly the token's text (it was found by it).
    l.text = tokens_[c.id];
    l.id = c.id;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_pair(l.prev, c.left);
    try_pair(c.left, l.next);
  }
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_bos,
                                          bool add_eos) const {
  std::vector<int32_t> out;
  if (add_bos && bos_ >= 0) out.push_back(bos_);
  std::vector<Symbol> syms;
  std::string spaced;  // kSentencePiece: the text with "▁" for spaces (symbols view it)
  if (style_ == VocabStyle::kLlama2c) {
    syms.reserve(text.size() + 1);
    split_llama2c(text, syms);
  } else if (!text.empty()) {
    spaced.reserve(text.size() + 3);
    spaced.append(kSpaceMark);
    for (char c : text) {
      if (c == ' ') spaced.append(kSpaceMark);
      else spaced.push_back(c);
    }
    syms.reserve(spaced.size());
    split_sentencepiece(spaced, syms);
  }
  merge(syms);
  out.reserve(out.size() + syms.size() + 1);
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    if (syms[i].id >= 0) {
      out.push_back(syms[i].id);
    } else {
      for (char c : syms[i].text) {
        const int32_t b = byte_or_unk(static_cast<uint8_t>(c));
        if (b >= 0) out.push_back(b);
      }
    }
  }
  if (add_eos && eos_ >= 0) out.push_back(eos_);
  return out;
}

std::string BpeTokenizer::piece(int32_t prev, int32_t token) const {
  if (token < 0 || token >= vocab_size()) return {};
  if (token == bos_ || token == eos_ || types_[token] == TokenType::kControl) return {};
  if (byte_value_[token] >= 0) return std::string(1, static_cast<char>(byte_value_[token]));
  std::string s;
  if (style_ == VocabStyle::kSentencePiece) {
    const std::string_view t = tokens_[token];
    s.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
      if (t.substr(i, kSpaceMark.size()) == kSpaceMark) {
        s.push_back(' ');
        i += kSpaceMark.size();
      } else {
        s.push_back(t[i++]);
      }
    }
  } else {
    s = tokens_[token];
  }
  // The dummy prefix: after BOS (or at the start) a leading space is dropped.
  if (prev == bos_ && dummy_prefix_ && !s.empty() && s[0] == ' ') s.erase(0, 1);
  return s;
}

}  // namespace radix::tok
