// stories260K as a GGUF file (written here from the format's specification,
// with llama.cpp's tensor names and its tokenizer.ggml.* vocabulary): the
// model loads from it with the same configuration, F32 weights give the same
// logits as the llama2.c checkpoint, Q8_0 weights give close ones, and the
// embedded vocabulary encodes prompts as the llama2.c tokenizer does.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/gguf_writer.h"
#include "radix/core/half.h"
#include "radix/io/gguf.h"
#include "radix/models/llama/generator.h"
#include "radix/tokenizer/gguf_vocab.h"
#include "models/stories.h"
#include "test_util.h"

namespace radix {
namespace {

namespace gw = io::testing;
using testing::cpu;
using testing::must;
using testing::kModel;
using testing::kTok;


// Q8_0 from the format's definition: blocks of 32, d = max|x| / 127 (as
// f16), q = round(x / d).
std::string quantize_q8_0(const float* x, size_t n) {
  std::string out;
  for (size_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const uint16_t dbits = float_to_f16(amax / 127.f);
    const float d = f16_to_float(dbits);
    gw::put<uint16_t>(out, dbits);
    for (int j = 0; j < 32; ++j)
      out.push_back(static_cast<char>(d == 0 ? 0 : static_cast<int8_t>(std::lround(x[b * 32 + j] / d))));
  }
  return out;
}

// Q4_0 from the format's definition (llama.cpp's rounding): blocks of 32,
// m = the value of largest magnitude, d = m / -8 (as f16), nibble =
// min(15, trunc(x / d + 8.5)); byte j holds value j (low nibble) and j + 16.
std::string quantize_q4_0(const float* x, size_t n) {
  std::string out;
  for (size_t b = 0; b < n / 32; ++b) {
    float m = 0;
    for (int j = 0; j < 32; ++j)
      if (std::fabs(x[b * 32 + j]) > std::fabs(m)) m = x[b * 32 + j];
    const float d = m / -8.f, id = d != 0 ? 1.f / d : 0.f;
    gw::put<uint16_t>(out, float_to_f16(d));
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = std::min(15, static_cast<int>(x[b * 32 + j] * id + 8.5f));
    for (int j = 0; j < 16; ++j) out.push_back(static_cast<char>(q[j] | (q[j + 16] << 4)));
  }
  return out;
}

// Writes the llama2.c checkpoint as GGUF; matrices whose rows are a
// multiple of 32 as `matrices` (0: F32, 8: Q8_0, 2: Q4_0, ggml's type
// numbers); `hidden` is the feed-forward width.
std::string write_gguf(const io::WeightStore& src, const tok::Tokenizer& tk, const std::string& tok_path, int matrices,
                       uint32_t hidden = 172) {
  gw::GgufFile f;
  auto u32 = [](uint32_t v) { return gw::scalar<uint32_t>(4, v); };
  auto f32 = [](float v) { return gw::scalar<float>(6, v); };
  f.kv = {{"general.architecture", gw::str("llama")},   {"general.alignment", u32(32)},
          {"llama.embedding_length", u32(64)},          {"llama.feed_forward_length", u32(hidden)},
          {"llama.block_count", u32(5)},                {"llama.attention.head_count", u32(8)},
          {"llama.attention.head_count_kv", u32(4)},    {"llama.context_length", u32(512)},
          {"llama.attention.layer_norm_rms_epsilon", f32(1e-5f)}, {"llama.rope.freq_base", f32(10000.f)},
          {"tokenizer.ggml.model", gw::str("llama")},   {"tokenizer.ggml.bos_token_id", u32(1)},
          {"tokenizer.ggml.eos_token_id", u32(2)}};
  // The vocabulary: tok512.bin read directly (f32 score, i32 length, bytes),
  // spaces as U+2581 as SentencePiece-style vocabularies spell them.
  std::ifstream in(tok_path, std::ios::binary);
  int32_t max_len;
  in.read(reinterpret_cast<char*>(&max_len), 4);
  std::vector<gw::V> tokens, scores, types;
  for (int i = 0; i < tk.vocab_size(); ++i) {
    float score;
    int32_t len;
    in.read(reinterpret_cast<char*>(&score), 4);
    in.read(reinterpret_cast<char*>(&len), 4);
    std::string t(static_cast<size_t>(len), '\0');
    in.read(t.data(), len);
    std::string spm;
    for (char c : t) spm += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    tokens.push_back(gw::str(spm));
    scores.push_back(gw::scalar<float>(6, score));
    const int type = i == 0 ? 2 : (i <= 2 ? 3 : (t.size() == 6 && t.rfind("<0x", 0) == 0 ? 6 : 1));
    types.push_back(gw::scalar<int32_t>(5, type));
  }
  f.kv.push_back({"tokenizer.ggml.tokens", gw::arr(8, tokens)});
  f.kv.push_back({"tokenizer.ggml.scores", gw::arr(6, scores)});
  f.kv.push_back({"tokenizer.ggml.token_type", gw::arr(5, types)});
  // llama.cpp's names, spelled out here independently of llama_weight_names.
  auto gguf_name = [](const std::string& n) -> std::string {
    if (n == "tok_embeddings") return "token_embd.weight";
    if (n == "norm") return "output_norm.weight";
    static const std::pair<const char*, const char*> m[] = {
        {"attention_norm", "attn_norm"}, {"attention.wq", "attn_q"},      {"attention.wk", "attn_k"},
        {"attention.wv", "attn_v"},      {"attention.wo", "attn_output"}, {"ffn_norm", "ffn_norm"},
        {"feed_forward.w1", "ffn_gate"}, {"feed_forward.w2", "ffn_down"}, {"feed_forward.w3", "ffn_up"}};
    size_t dot = n.find('.', 7);
    for (auto [a, b] : m)
      if (n.substr(dot + 1) == a) return "blk." + n.substr(7, dot - 7) + "." + b + ".weight";
    return "";
  };
  for (const io::TensorInfo& t : src.tensors()) {
    if (t.name == "output") continue;  // tied: llama.cpp reuses token_embd
    std::span<const std::byte> bytes = must(src.bytes(t.name));
    gw::GgufFile::Tensor g;
    g.name = gguf_name(t.name);
    for (int a = t.shape.rank() - 1; a >= 0; --a) g.ne.push_back(static_cast<uint64_t>(t.shape.dim(a)));
    const bool quantize = matrices != 0 && t.shape.rank() == 2 && t.shape.dim(1) % 32 == 0;
    const auto* x = reinterpret_cast<const float*>(bytes.data());
    g.type = quantize ? static_cast<uint32_t>(matrices) : 0;
    g.data = !quantize       ? std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())
             : matrices == 8 ? quantize_q8_0(x, bytes.size() / 4)
                             : quantize_q4_0(x, bytes.size() / 4);
    f.tensors.push_back(std::move(g));
  }
  return f.build();
}

class LlamaGguf : public ::testing::Test {
 protected:
  void SetUp() override {
    llama2c_ = must(io::open_weights(kModel));
    tk_ = must(tok::load_llama2c_tokenizer(kTok, 512));
  }
  std::string file(bool q8) {
    const auto p = std::filesystem::temp_directory_path() /
                   ("radix-llama-" + std::to_string(::getpid()) + (q8 ? "-q8" : "-f32") + ".gguf");
    std::ofstream(p, std::ios::binary) << write_gguf(*llama2c_, *tk_, kTok, q8 ? 8 : 0);
    paths_.push_back(p);
    return p.string();
  }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  static models::LlamaGenerator::Options options() { return testing::stories_options(); }
  std::unique_ptr<io::WeightStore> llama2c_;
  std::unique_ptr<tok::Tokenizer> tk_;
  std::vector<std::filesystem::path> paths_;
};

TEST_F(LlamaGguf, F32WeightsGiveTheSameLogits) {
  auto gguf = must(io::open_weights(file(false)));
  EXPECT_EQ(gguf->format(), "gguf");
  models::LlamaConfig c = must(models::llama_config_from(*gguf));
  EXPECT_EQ(c.to_string(), must(models::llama_config_from(*llama2c_)).to_string());
  EXPECT_TRUE(c.tied_classifier);
  auto a = must(models::LlamaGenerator::load(cpu(), *gguf, options()));
  auto b = must(models::LlamaGenerator::load(cpu(), *llama2c_, options()));
  for (int32_t t : {1, 403, 407, 261}) {
    EXPECT_EQ(must(a->forward(std::span<const int32_t>(&t, 1))), must(b->forward(std::span<const int32_t>(&t, 1))));
  }
}

TEST_F(LlamaGguf, Q8_0WeightsGiveCloseLogits) {
  auto gguf = must(io::open_weights(file(true)));
  auto a = must(models::LlamaGenerator::load(cpu(), *gguf, options()));
  auto b = must(models::LlamaGenerator::load(cpu(), *llama2c_, options()));
  for (int32_t t : {1, 403, 407}) {
    std::vector<float> q = must(a->forward(std::span<const int32_t>(&t, 1)));
    std::vector<float> f = must(b->forward(std::span<const int32_t>(&t, 1)));
    double err = 0, mx = 0;
    for (size_t i = 0; i < q.size(); ++i) err = std::max(err, double(std::fabs(q[i] - f[i]))), mx = std::max(mx, double(std::fabs(f[i])));
    // 8-bit weights (relative step 1/254 per block) through 5 layers: a few
    // percent of the largest logit; the likeliest token stays the same.
    EXPECT_LT(err, 0.05 * mx) << "token " << t;
    EXPECT_EQ(std::max_element(q.begin(), q.end()) - q.begin(), std::max_element(f.begin(), f.end()) - f.begin());
  }
}

// A GGUF file whose every matrix is Q8_0, or Q4_0 (stories260K with a
// 160-wide feed-forward, so that every width is a multiple of 32), runs with
// its matrices kept in that format by default, taken from the file's blocks
// (none dequantized on the way); with f32 activations the logits match the
// same file run with the matrices dequantized to f32 (weight_dtype f32), to
// f32 rounding, and with the default int8 activations within their rounding
// (8 bits per block through 5 layers: about 1.5% of the largest logit here;
// held to 3%), the likeliest token the same.
TEST_F(LlamaGguf, QuantizedMatricesStayQuantized) {
  const std::string narrow = testing::write_narrower_ffn(160);
  paths_.push_back(narrow);
  auto src = must(io::open_weights(narrow));
  for (const auto& [type, format] : {std::pair{8, QuantFormat::kQ8_0}, std::pair{2, QuantFormat::kQ4_0}}) {
    SCOPED_TRACE(quant_format_name(format));
    const auto p = std::filesystem::temp_directory_path() /
                   ("radix-llama-" + std::to_string(::getpid()) + "-" + quant_format_name(format) + "n.gguf");
    std::ofstream(p, std::ios::binary) << write_gguf(*src, *tk_, kTok, type, 160);
    paths_.push_back(p);
    auto gguf = must(io::open_weights(p.string()));
    auto int8 = must(models::LlamaGenerator::load(cpu(), *gguf, options()));
    ASSERT_TRUE(int8->config().weight_quant.has_value());
    // On x86 with AVX2, Q4_0 is held as Q4_0x16 and Q8_0 as Q8_0x16 (16
    // rows interleaved, Options::interleave_rows), with integer or f32
    // activations; interleave_rows off keeps the file's format.
    const bool rows16 = __builtin_cpu_supports("avx2");
    const QuantFormat x16 = format == QuantFormat::kQ4_0 ? QuantFormat::kQ4_0x16 : QuantFormat::kQ8_0x16;
    EXPECT_EQ(*int8->config().weight_quant, rows16 ? x16 : format);
    models::LlamaGenerator::Options plain_rows = options();
    plain_rows.interleave_rows = false;
    auto plain = must(models::LlamaGenerator::load(cpu(), *gguf, plain_rows));
    EXPECT_EQ(*plain->config().weight_quant, format);
    models::LlamaGenerator::Options exact = options();
    exact.quantized_activations = QuantizedActivations::kF32;
    auto kept = must(models::LlamaGenerator::load(cpu(), *gguf, exact));
    EXPECT_EQ(*kept->config().weight_quant, rows16 ? x16 : format);
    // Both took the file's blocks as they are: no matrix was dequantized to
    // f32 on the way (the embedding table, looked up in f32, is).
    const auto& store = static_cast<const io::GgufStore&>(*gguf);
    for (const char* m : {"blk.0.attn_q.weight", "blk.4.ffn_down.weight", "blk.2.attn_output.weight"}) {
      ASSERT_EQ(store.file_type(m), type == 8 ? io::GgmlType::kQ8_0 : io::GgmlType::kQ4_0) << m;
      EXPECT_FALSE(store.dequantized(m)) << m;
    }
    EXPECT_TRUE(store.dequantized("token_embd.weight"));
    models::LlamaGenerator::Options f32 = options();
    f32.weight_dtype = DType::kF32;
    auto wide = must(models::LlamaGenerator::load(cpu(), *gguf, f32));
    EXPECT_FALSE(wide->config().weight_quant.has_value());
    for (int32_t t : {1, 403, 407}) {
      std::vector<float> q = must(kept->forward(std::span<const int32_t>(&t, 1)));
      std::vector<float> f = must(wide->forward(std::span<const int32_t>(&t, 1)));
      std::vector<float> i = must(int8->forward(std::span<const int32_t>(&t, 1)));
      double mx = 0;
      for (float v : f) mx = std::max(mx, double(std::fabs(v)));
      EXPECT_TRUE(testing::all_close(q, f, 0, 1e-4 * mx)) << "token " << t;
      EXPECT_TRUE(testing::all_close(i, f, 0, 3e-2 * mx)) << "token " << t;
      // The interleaved rows hold the same numbers: the same integer sums
      // per block, only their f32 accumulation order differs.
      EXPECT_TRUE(testing::all_close(i, must(plain->forward(std::span<const int32_t>(&t, 1))), 0, 1e-4 * mx))
          << "token " << t;
      EXPECT_EQ(std::max_element(i.begin(), i.end()) - i.begin(), std::max_element(f.begin(), f.end()) - f.begin());
    }
  }
}

TEST_F(LlamaGguf, EmbeddedVocabularyEncodesLikeTheLlama2cTokenizer) {
  auto gguf = must(io::open_gguf(file(false)));
  auto tk = must(tok::gguf_tokenizer(*gguf));
  EXPECT_EQ(tk->vocab_size(), 512);
  EXPECT_EQ(tk->bos(), 1);
  for (const char* text : {"Once upon a time, there was a little girl.", "Tom said: \"hi!\"\nThe end", "naïve café"}) {
    std::vector<int32_t> want = tk_->encode(text, true, false);
    EXPECT_EQ(tk->encode(text, true, false), want) << text;
    EXPECT_EQ(tk->decode(want), text);
  }
}

}  // namespace
}  // namespace radix
