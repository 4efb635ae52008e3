// libFuzzer target: llama2.c checkpoints (parse_llama2c_header,
// open_llama2c, open_weights).
//
// A checkpoint only opens at its exact size, which random mutation rarely
// hits, so each input is tried twice: as is, and, when its header is valid
// and the config needs at most 256 KiB, resized (the input's bytes, repeated
// or cut) to exactly llama2c_file_bytes(config), which must then open.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "radix/io/llama2c.h"
#include "radix/io/weight_store.h"

namespace {

void check_store(const radix::io::Llama2cStore& s, const radix::io::Llama2cConfig& c) {
  FUZZ_CHECK(s.config() == c, "the store's config is not the header's");
  FUZZ_CHECK(s.format() == "llama2c", "format() is " + s.format());
  radix::fuzz::exercise_store(s);
  const auto& md = s.metadata();
  FUZZ_CHECK(md.count("llama2c.dim") && md.at("llama2c.dim") == std::to_string(c.dim), "llama2c.dim");
  FUZZ_CHECK(md.count("llama2c.vocab_size") && md.at("llama2c.vocab_size") == std::to_string(c.vocab_size),
             "llama2c.vocab_size");
  const radix::io::TensorInfo* emb = s.find("tok_embeddings");
  FUZZ_CHECK(emb != nullptr && emb->shape.dims().size() == 2 && emb->shape.dims()[0] == c.vocab_size &&
                 emb->shape.dims()[1] == c.dim,
             "tok_embeddings is not [vocab, dim]");
  FUZZ_CHECK(s.find("output") != nullptr && s.find("norm") != nullptr, "output / norm missing");
  // A shared classifier is tok_embeddings' bytes again.
  const uint64_t shared = c.shared_classifier ? uint64_t(c.vocab_size) * uint64_t(c.dim) * 4 : 0;
  FUZZ_CHECK(s.total_bytes() <= radix::io::llama2c_file_bytes(c) + shared, "tensors add up to more than the file");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const std::string path = radix::fuzz::write_file("input.bin", data, size);
  radix::fuzz::FuzzMapGuard guard;
  auto store = radix::io::open_llama2c(path);
  auto any = radix::io::open_weights(path);
  if (any.ok()) radix::fuzz::exercise_store(**any);
  if (size < radix::io::kLlama2cHeaderBytes) {
    FUZZ_CHECK(!store.ok(), "a file shorter than the header opened");
    return 0;
  }
  auto config = radix::io::parse_llama2c_header(bytes.first(radix::io::kLlama2cHeaderBytes), path);
  if (!config.ok()) {
    FUZZ_CHECK(!store.ok(), "open_llama2c accepted a header parse_llama2c_header rejects");
    return 0;
  }
  const radix::io::Llama2cConfig& c = *config;
  FUZZ_CHECK(c.dim >= 1 && c.n_heads >= 1 && c.n_kv_heads >= 1 && c.dim % c.n_heads == 0 &&
                 c.n_heads % c.n_kv_heads == 0 && c.vocab_size >= 1,
             "parse_llama2c_header accepted an inconsistent config");
  const uint64_t need = radix::io::llama2c_file_bytes(c);
  if (store.ok()) {
    FUZZ_CHECK(need == size, "opened a file of " + std::to_string(size) + " bytes, the config needs " +
                                 std::to_string(need));
    check_store(**store, c);
  }

  // The same header at exactly the size its config needs.
  if (need != size && need <= (uint64_t{256} << 10)) {
    std::vector<uint8_t> exact(need);
    for (size_t i = 0; i < exact.size(); ++i) exact[i] = data[i % size];
    const std::string exact_path = radix::fuzz::write_file("exact.bin", exact.data(), exact.size());
    auto s2 = radix::io::open_llama2c(exact_path);
    FUZZ_CHECK(s2.ok(), "a valid header at its exact size did not open: " + s2.status().to_string());
    check_store(**s2, c);
  }
  return 0;
}
