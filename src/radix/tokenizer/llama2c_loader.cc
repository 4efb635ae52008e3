// llama2.c's tokenizer.bin: int32 max_token_length, then per token: f32 score,
// int32 length, `length` bytes (little-endian, as llama2.c writes it on x86 / ARM).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "radix/tokenizer/bpe_tokenizer.h"
#include "radix/tokenizer/tokenizer.h"

namespace radix::tok {
namespace {

// Real tokenizers have tokens of tens of bytes; these bound what a corrupt header can
// make us believe (llama2.c allocates 2 * max_token_length bytes per encode).
constexpr int32_t kMaxTokenLength = 1 << 16;
constexpr std::streamoff kMaxFileBytes = std::streamoff(1) << 30;

int32_t read_i32(const char* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
float read_f32(const char* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_llama2c_tokenizer(const std::string& path,
                                                          int32_t vocab_size) {
  const std::string what = "llama2.c tokenizer file '" + path + "'";
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return Status(ErrorCode::kIoError, "cannot open " + what);
  const std::streamoff size = f.tellg();
  if (size < 0) return Status(ErrorCode::kIoError, "cannot read the size of " + what);
  if (size > kMaxFileBytes)
    return invalid_argument(what + ": " + std::to_string(size) + " bytes is too large for a tokenizer");
  std::string data(static_cast<size_t>(size), '\0');
  f.seekg(0);
  if (!f.read(data.data(), size)) return Status(ErrorCode::kIoError, "cannot read " + what);
  return parse_llama2c_tokenizer(data, vocab_size, what);
}

Result<std::unique_ptr<Tokenizer>> parse_llama2c_tokenizer(std::string_view data,
                                                           int32_t vocab_size,
                                                           const std::string& what) {
  if (vocab_size != -1 && vocab_size < 3)
    return invalid_argument(what + ": vocab_size " + std::to_string(vocab_size) +
                            " (needs -1 to read to the end, or at least 3: BOS is 1, EOS is 2)");
  const char* p = data.data();
  size_t left = data.size();
  if (left < 4)
    return invalid_argument(what + ": truncated: " + std::to_string(left) +
                            " bytes, too short for the int32 max_token_length header");
  const int32_t max_len = read_i32(p);
  p += 4, left -= 4;
  if (max_len < 1 || max_len > kMaxTokenLength)
    return invalid_argument(what + ": max_token_length " + std::to_string(max_len) +
                            " is out of range [1, " + std::to_string(kMaxTokenLength) + "]");

  std::vector<std::string> tokens;
  std::vector<float> scores;
  // Each token takes at least 8 bytes, so a huge vocab_size cannot reserve past the file.
  const size_t expect = vocab_size > 0 ? std::min<size_t>(vocab_size, left / 8) : left / 8;
  tokens.reserve(expect);
  scores.reserve(expect);
  for (int64_t i = 0; vocab_size < 0 ? left > 0 : i < vocab_size; ++i) {
    const auto at = [&] { return what + ": token " + std::to_string(i); };
    if (left < 8)
      return invalid_argument(at() + ": truncated: " + std::to_string(left) +
                              " bytes left, the score and length need 8" +
                              (vocab_size > 0 ? " (vocab_size " + std::to_string(vocab_size) + ")"
                                              : std::string()));
    const float score = read_f32(p);
    const int32_t len = read_i32(p + 4);
    p += 8, left -= 8;
    if (std::isnan(score)) return invalid_argument(at() + ": score is NaN");
    if (len < 0) return invalid_argument(at() + ": negative length " + std::to_string(len));
    if (len > max_len)
      return invalid_argument(at() + ": length " + std::to_string(len) +
                              " exceeds max_token_length " + std::to_string(max_len));
    if (static_cast<size_t>(len) > left)
      return invalid_argument(at() + ": truncated: length " + std::to_string(len) +
                              " runs past the end of the file (" + std::to_string(left) +
                              " bytes left)");
    tokens.emplace_back(p, static_cast<size_t>(len));
    scores.push_back(score);
    p += len, left -= len;
  }
  if (tokens.size() < 3)
    return invalid_argument(what + ": only " + std::to_string(tokens.size()) +
                            " tokens (BOS is 1 and EOS is 2, so at least 3 are needed)");
  RADIX_ASSIGN_OR_RETURN(auto t, BpeTokenizer::create(std::move(tokens), std::move(scores), {},
                                                      /*bos=*/1, /*eos=*/2, VocabStyle::kLlama2c,
                                                      what));
  return std::unique_ptr<Tokenizer>(std::move(t));
}

}  // namespace radix::tok
