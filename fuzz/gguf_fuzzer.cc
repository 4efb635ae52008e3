// libFuzzer target: GGUF v3 files (open_gguf, open_weights), their typed
// metadata, every tensor (including dequantized Q4_0 / Q8_0 ones) and the
// embedded tokenizer (tokenizer.ggml.*), which is encoded and decoded.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "radix/io/gguf.h"
#include "radix/io/weight_store.h"
#include "radix/tokenizer/gguf_vocab.h"

namespace {

volatile double g_sink;

void exercise_value(const radix::io::GgufValue& v, int depth) {
  std::string s = v.to_string();
  double acc = static_cast<double>(s.size());
  if (auto i = v.as_int()) acc += static_cast<double>(*i);
  if (auto u = v.as_uint()) acc += static_cast<double>(*u);
  if (auto f = v.as_float()) acc += *f;
  if (auto b = v.as_bool()) acc += *b;
  if (const std::string* str = v.as_string()) acc += static_cast<double>(str->size());
  (void)radix::io::gguf_type_name(v.type());
  if (const radix::io::GgufArray* a = v.as_array()) {
    FUZZ_CHECK(depth <= 8, "arrays nest deeper than 8");
    for (const radix::io::GgufValue& item : a->items) {
      FUZZ_CHECK(item.type() == a->type, "an array item's type is not the array's");
      exercise_value(item, depth + 1);
    }
  }
  g_sink = acc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The dequantizers on the raw bytes, as whole blocks.
  {
    const std::span<const std::byte> raw(reinterpret_cast<const std::byte*>(data), size);
    std::vector<float> out((size / 18 + 1) * 32);
    radix::io::dequantize_q8_0(raw.first(size / 34 * 34), std::span<float>(out).first(size / 34 * 32));
    radix::io::dequantize_q4_0(raw.first(size / 18 * 18), std::span<float>(out).first(size / 18 * 32));
  }

  const std::string path = radix::fuzz::write_file("input.gguf", data, size);
  radix::fuzz::FuzzMapGuard guard;
  auto store = radix::io::open_gguf(path);
  auto any = radix::io::open_weights(path);
  if (!store.ok()) return 0;
  FUZZ_CHECK(any.ok(), "open_gguf accepts what open_weights rejects: " + any.status().to_string());
  FUZZ_CHECK((*any)->format() == "gguf", "open_weights read a GGUF file as " + (*any)->format());
  const radix::io::GgufStore& s = **store;
  FUZZ_CHECK(s.version() == 3, "version " + std::to_string(s.version()));
  FUZZ_CHECK(s.alignment() > 0 && (s.alignment() & (s.alignment() - 1)) == 0, "alignment not a power of two");
  radix::fuzz::exercise_store(s);
  for (const radix::io::TensorInfo& t : s.tensors()) {
    const std::optional<radix::io::GgmlType> type = s.file_type(t.name);
    FUZZ_CHECK(type.has_value(), "no file type for '" + t.name + "'");
    // Quantized tensors' blocks: exactly their elements' blocks (split as
    // the Llama loader splits them); any other tensor has none.
    auto blocks = s.blocks(t.name);
    const bool quantized = *type == radix::io::GgmlType::kQ4_0 || *type == radix::io::GgmlType::kQ8_0;
    FUZZ_CHECK(blocks.ok() == quantized, "blocks('" + t.name + "'): " + blocks.status().to_string());
    if (quantized) {
      const size_t block_bytes = *type == radix::io::GgmlType::kQ8_0 ? 34 : 18;
      FUZZ_CHECK(blocks->size() == static_cast<size_t>(t.shape.count()) / 32 * block_bytes,
                 "blocks('" + t.name + "') is " + std::to_string(blocks->size()) + " bytes");
    }
  }
  FUZZ_CHECK(s.metadata().size() == s.values().size(), "metadata() and values() differ in size");
  for (const auto& [key, v] : s.values()) {
    exercise_value(v, 0);
    auto it = s.metadata().find(key);
    FUZZ_CHECK(it != s.metadata().end() && it->second == v.to_string(),
               "metadata()['" + key + "'] is not values()['" + key + "'].to_string()");
  }
  auto tok = radix::tok::gguf_tokenizer(s);
  if (tok.ok()) radix::fuzz::exercise_tokenizer(**tok);
  return 0;
}
