// Score-merge BPE over a vocabulary of (text, score, type): llama2.c's tokenizer and
// SentencePiece-style vocabularies as GGUF files embed them.
//
// Encoding: split the text into UTF-8 characters (after the style's dummy prefix), then
// repeatedly merge the adjacent pair whose concatenation is a token with the highest
// score (ties: the leftmost pair) until no pair merges. The merge loop keeps a heap of
// candidate pairs over a linked list of symbols: O(n log n) in the text length, one
// hash lookup per candidate pair, no work proportional to the vocabulary size.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "radix/core/status.h"
#include "radix/tokenizer/tokenizer.h"

namespace radix::tok {

class BpeTokenizer final : public Tokenizer {
 public:
  // Validates the arrays (sizes, types, NaN scores, bos/eos range); errors start with
  // `what` (e.g. the file name).
  static Result<std::unique_ptr<BpeTokenizer>> create(std::vector<std::string> tokens,
                                                      std::vector<float> scores,
                                                      std::vector<int32_t> types, int32_t bos,
                                                      int32_t eos, VocabStyle style,
                                                      const std::string& what = "vocabulary");

  std::vector<int32_t> encode(std::string_view text, bool bos, bool eos) const override;
  std::string piece(int32_t prev, int32_t token) const override;
  int32_t bos() const override { return bos_; }
  int32_t eos() const override { return eos_; }
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }

  VocabStyle style() const { return style_; }
  const std::string& token_text(int32_t id) const { return tokens_.at(id); }
  float score(int32_t id) const { return scores_.at(id); }
  // The id of the token for raw byte b (byte fallback), -1 when the vocabulary has none.
  int32_t byte_token(uint8_t b) const { return byte_id_[b]; }

 private:
  struct Symbol {
    std::string_view text;  // what merges concatenate (a token's text, or raw text)
    int32_t id;             // -1: not a token (kSentencePiece; falls back to bytes)
    int32_t prev, next;     // linked list over live symbols; -1 at the ends
    bool alive;
  };
  // Transparent hashing so a string_view looks up without a copy.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  BpeTokenizer() = default;
  void split_llama2c(std::string_view text, std::vector<Symbol>& syms) const;
  void split_sentencepiece(std::string_view text, std::vector<Symbol>& syms) const;
  void merge(std::vector<Symbol>& syms) const;
  int32_t lookup(std::string_view text) const;
  int32_t byte_or_unk(uint8_t b) const;

  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  VocabStyle style_ = VocabStyle::kSentencePiece;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1;
  int32_t space_id_ = -1;  // kLlama2c: the " " token, the dummy prefix
  bool dummy_prefix_ = true;
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> lookup_;  // matchable text -> id
  std::array<int32_t, 256> byte_id_{};
  std::vector<int16_t> byte_value_;  // per token: the raw byte it decodes to, or -1
};

}  // namespace radix::tok
