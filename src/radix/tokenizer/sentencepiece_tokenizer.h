// A SentencePiece model (.model) behind the Tokenizer interface, via libsentencepiece.
//
// encode() is SentencePiece's own Encode (its normalizer, BPE or unigram model and byte
// fallback). piece() follows SentencePiece's decoder: "▁" prints as a space, the dummy
// prefix space after BOS (or at the start) is dropped when the model adds one, byte
// pieces print their raw byte (invalid UTF-8 is left to Utf8Stream rather than turned
// into U+FFFD), control pieces print nothing and <unk> prints " ⁇ ".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "radix/core/status.h"
#include "radix/tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}  // namespace sentencepiece

namespace radix::tok {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<SentencePieceTokenizer>> load(const std::string& path);
  ~SentencePieceTokenizer() override;

  std::vector<int32_t> encode(std::string_view text, bool bos, bool eos) const override;
  std::string piece(int32_t prev, int32_t token) const override;
  int32_t bos() const override { return bos_; }
  int32_t eos() const override { return eos_; }
  int32_t vocab_size() const override { return vocab_size_; }

  // Whether the model's normalizer prepends a "▁" (add_dummy_prefix).
  bool adds_dummy_prefix() const { return dummy_prefix_; }

 private:
  SentencePieceTokenizer();

  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int32_t bos_ = -1, eos_ = -1, vocab_size_ = 0;
  bool dummy_prefix_ = true;
};

}  // namespace radix::tok
