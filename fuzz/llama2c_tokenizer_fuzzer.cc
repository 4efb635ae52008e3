// libFuzzer target: llama2.c's tokenizer.bin (parse_llama2c_tokenizer from
// memory, load_llama2c_tokenizer from a file), then encode / decode with
// every accepted vocabulary.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "radix/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tok = radix::tok::parse_llama2c_tokenizer(bytes);
  const std::string path = radix::fuzz::write_file("tokenizer.bin", data, size);
  auto from_file = radix::tok::load_llama2c_tokenizer(path);
  FUZZ_CHECK(tok.ok() == from_file.ok(), "parsing from memory and from the file disagree");
  if (!tok.ok()) return 0;
  const int32_t n = (*tok)->vocab_size();
  FUZZ_CHECK(n >= 3 && (*tok)->bos() == 1 && (*tok)->eos() == 2, "vocab_size / BOS / EOS");
  FUZZ_CHECK((*from_file)->vocab_size() == n, "vocab_size differs between memory and file");
  // Reading exactly vocab_size tokens gives the same vocabulary.
  auto sized = radix::tok::parse_llama2c_tokenizer(bytes, n);
  FUZZ_CHECK(sized.ok() && (*sized)->vocab_size() == n, "vocab_size = " + std::to_string(n) + " is rejected");
  for (int32_t id = 0; id < n && id < 64; ++id)
    FUZZ_CHECK((*sized)->piece(-2, id) == (*tok)->piece(-2, id), "piece " + std::to_string(id) + " differs");
  radix::fuzz::exercise_tokenizer(**tok);
  return 0;
}
