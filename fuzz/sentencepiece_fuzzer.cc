// libFuzzer target: SentencePiece .model files through Radix's wrapper
// (load_sentencepiece; libsentencepiece parses the protobuf), then encode /
// decode with every accepted model.
//
// libsentencepiece itself is not instrumented (Debian's shared library):
// coverage guidance and ASan see only Radix's side, so mutations of the
// protobuf explore blindly; the seeds carry the interesting structure.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "radix/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = radix::fuzz::write_file("input.model", data, size);
  auto tok = radix::tok::load_sentencepiece(path);
  if (!tok.ok()) return 0;
  radix::fuzz::exercise_tokenizer(**tok);
  return 0;
}
