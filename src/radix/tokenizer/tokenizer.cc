#include "radix/tokenizer/tokenizer.h"

#include <utility>

namespace radix::tok {

Tokenizer::~Tokenizer() = default;

std::string Tokenizer::decode(std::span<const int32_t> tokens) const {
  std::string out;
  int32_t prev = bos();  // the start of the sequence counts as "after BOS"
  for (int32_t t : tokens) {
    out += piece(prev, t);
    prev = t;
  }
  return out;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(std::vector<std::string> tokens,
                                                         std::vector<float> scores,
                                                         std::vector<int32_t> types, int32_t bos,
                                                         int32_t eos, VocabStyle style) {
  return tokenizer_from_vocab(std::move(tokens), std::move(scores), std::move(types), bos, eos,
                              style);
}

}  // namespace radix::tok
