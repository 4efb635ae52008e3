// Tokenizers: text <-> token ids for the language models Radix runs.
//
// Three sources, one interface:
//   * llama2.c's tokenizer.bin (load_llama2c_tokenizer): score-merge BPE exactly as
//     llama2.c's run.c encodes and decodes;
//   * SentencePiece .model files (load_sentencepiece), through libsentencepiece;
//   * a vocabulary given as arrays (tokenizer_from_vocab), as GGUF files embed it
//     (tokenizer.ggml.tokens / scores / token_type / bos_token_id / eos_token_id).
//
// Decoding works on bytes: piece() and decode() return the exact bytes of the tokens,
// which need not be valid UTF-8 (a character may span several byte tokens). Feed the
// pieces through Utf8Stream (utf8_stream.h) to print text as it is generated.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "radix/core/status.h"

namespace radix::tok {

// GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Conventions of a score-merge BPE vocabulary (see tokenizer_from_vocab).
enum class VocabStyle {
  // llama2.c: spaces are ' '; a " " token is the dummy prefix; a codepoint missing from
  // the vocabulary becomes byte tokens before merging; merges concatenate token texts.
  kLlama2c,
  // SentencePiece / GGUF model "llama": spaces are "▁" (U+2581), a leading "▁" is the
  // dummy prefix; merges concatenate the text; symbols left unknown fall back to <0xNN>.
  kSentencePiece,
};

class Tokenizer {
 public:
  virtual ~Tokenizer();

  // Token ids of `text` (any bytes). bos/eos: put bos() first / eos() last.
  virtual std::vector<int32_t> encode(std::string_view text, bool bos, bool eos) const = 0;

  // The bytes of `token` as it prints after `prev`: the leading space of a token that
  // follows BOS is the dummy prefix and is dropped (llama2.c's rule), <0xNN> is that
  // raw byte, BOS / EOS / control tokens print nothing. Pass prev = bos() at the start
  // of a sequence that has no BOS token. An id out of range prints nothing.
  virtual std::string piece(int32_t prev, int32_t token) const = 0;

  // The concatenated pieces, the start of the sequence counting as "after BOS", so
  // decode(encode(s, bos, eos)) == s at the byte level, with or without BOS.
  virtual std::string decode(std::span<const int32_t> tokens) const;

  virtual int32_t bos() const = 0;  // -1 when the vocabulary has none
  virtual int32_t eos() const = 0;  // -1 when the vocabulary has none
  virtual int32_t vocab_size() const = 0;

  // Same as tokenizer_from_vocab below.
  static Result<std::unique_ptr<Tokenizer>> from_vocab(std::vector<std::string> tokens,
                                                       std::vector<float> scores,
                                                       std::vector<int32_t> types, int32_t bos,
                                                       int32_t eos,
                                                       VocabStyle style = VocabStyle::kSentencePiece);
};

// llama2.c's tokenizer.bin: int32 max_token_length, then per token f32 score, int32
// length, `length` bytes. vocab_size = -1 reads tokens up to the end of the file; a
// given vocab_size reads that many (bytes after them are ignored, as llama2.c does).
// BOS is token 1, EOS token 2. Malformed files give an error naming the file and the
// token index.
Result<std::unique_ptr<Tokenizer>> load_llama2c_tokenizer(const std::string& path,
                                                          int32_t vocab_size = -1);
// The same from the file's bytes in memory; errors start with `what`.
Result<std::unique_ptr<Tokenizer>> parse_llama2c_tokenizer(
    std::string_view data, int32_t vocab_size = -1,
    const std::string& what = "llama2.c tokenizer");

// A SentencePiece model file (.model), encoded and decoded by libsentencepiece.
Result<std::unique_ptr<Tokenizer>> load_sentencepiece(const std::string& path);

// A score-merge BPE vocabulary given as arrays. `scores` and `types` (TokenType values)
// are either empty (all 0 / all kNormal) or one per token; bos / eos are token ids or
// -1. Byte-fallback tokens are found by name ("<0x41>"; with types given, only tokens
// of type kByte). Text matching skips control, unknown, unused and byte tokens
// (kSentencePiece style; kLlama2c style matches every token, as llama2.c does).
Result<std::unique_ptr<Tokenizer>> tokenizer_from_vocab(std::vector<std::string> tokens,
                                                        std::vector<float> scores,
                                                        std::vector<int32_t> types, int32_t bos,
                                                        int32_t eos,
                                                        VocabStyle style = VocabStyle::kSentencePiece);

}  // namespace radix::tok
