#include "radix/tokenizer/gguf_vocab.h"

namespace radix::tok {

Result<std::unique_ptr<Tokenizer>> gguf_tokenizer(const io::GgufStore& store) {
  auto bad = [&](const std::string& what) {
    return invalid_argument(store.path() + ": embedded tokenizer: " + what);
  };
  const io::GgufValue* model = store.value("tokenizer.ggml.model");
  if (!model || !model->as_string()) return bad("no tokenizer.ggml.model");
  if (*model->as_string() != "llama")
    return bad("tokenizer.ggml.model is '" + *model->as_string() + "'; only 'llama' (SentencePiece BPE) is supported");
  const io::GgufValue* tokens = store.value("tokenizer.ggml.tokens");
  if (!tokens || !tokens->as_array()) return bad("no tokenizer.ggml.tokens array");
  std::vector<std::string> toks;
  for (const io::GgufValue& v : tokens->as_array()->items) {
    if (!v.as_string()) return bad("tokenizer.ggml.tokens holds a non-string");
    toks.push_back(*v.as_string());
  }
  std::vector<float> scores;
  if (const io::GgufValue* s = store.value("tokenizer.ggml.scores"); s && s->as_array())
    for (const io::GgufValue& v : s->as_array()->items) scores.push_back(static_cast<float>(v.as_float().value_or(0)));
  else
    scores.assign(toks.size(), 0.f);
  std::vector<int32_t> types;
  if (const io::GgufValue* t = store.value("tokenizer.ggml.token_type"); t && t->as_array())
    for (const io::GgufValue& v : t->as_array()->items) types.push_back(static_cast<int32_t>(v.as_int().value_or(1)));
  auto id = [&](const char* key, int32_t fallback) {
    const io::GgufValue* v = store.value(key);
    return v && v->as_int() ? static_cast<int32_t>(*v->as_int()) : fallback;
  };
  auto r = tokenizer_from_vocab(std::move(toks), std::move(scores), std::move(types),
                                id("tokenizer.ggml.bos_token_id", 1), id("tokenizer.ggml.eos_token_id", 2),
                                VocabStyle::kSentencePiece);
  if (!r.ok()) return bad(r.status().message());
  return r;
}

}  // namespace radix::tok
