// The tokenizer a GGUF file embeds (tokenizer.ggml.*): llama.cpp's "llama"
// model, a score-merge BPE in SentencePiece style (spaces as U+2581, byte
// fallback through <0xNN> tokens).
#pragma once

#include <memory>

#include "radix/io/gguf.h"
#include "radix/tokenizer/tokenizer.h"

namespace radix::tok {

// kInvalidArgument naming the file and the key when tokenizer.ggml.model is
// not "llama" or the arrays are missing or inconsistent.
Result<std::unique_ptr<Tokenizer>> gguf_tokenizer(const io::GgufStore& store);

}  // namespace radix::tok
