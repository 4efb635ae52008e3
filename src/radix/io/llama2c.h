// llama2.c checkpoints (Karpathy's llama2.c "legacy" export, e.g.
// stories260K.bin).
//
// Layout: 7 little-endian int32 (dim, hidden_dim, n_layers, n_heads,
// n_kv_heads, vocab_size, seq_len; a negative vocab_size means the
// classifier is not shared with the token embedding), then f32 arrays:
// token_embedding [vocab, dim]; rms_att [layers, dim]; wq [layers, dim, dim];
// wk [layers, kv_dim, dim]; wv [layers, kv_dim, dim]; wo [layers, dim, dim];
// rms_ffn [layers, dim]; w1 [layers, hidden, dim]; w2 [layers, dim, hidden];
// w3 [layers, hidden, dim]; rms_final [dim]; freq_cis real and imag
// (seq_len * head_size / 2 floats each, skipped); then, if not shared, the
// classifier [vocab, dim]. kv_dim = dim * n_kv_heads / n_heads.
//
// The store names the tensors like Meta's Llama checkpoints, each a
// zero-copy f32 view into the mapping, shapes [out, in] row-major as in a
// PyTorch Linear: tok_embeddings [vocab, dim]; layers.{i}.attention_norm
// [dim]; layers.{i}.attention.wq [dim, dim], .wk / .wv [kv_dim, dim], .wo
// [dim, dim]; layers.{i}.ffn_norm [dim]; layers.{i}.feed_forward.w1 / .w3
// [hidden, dim], .w2 [dim, hidden]; norm [dim]; output [vocab, dim] (the
// same bytes as tok_embeddings when shared). tensors() follows the file
// order (all layers' attention_norm, then all wq, ...). metadata() holds
// the header: "llama2c.dim", "llama2c.hidden_dim", "llama2c.n_layers",
// "llama2c.n_heads", "llama2c.n_kv_heads", "llama2c.vocab_size" (positive),
// "llama2c.seq_len", "llama2c.shared_classifier" ("true" / "false").
//
// Checks: every header field in [1, 2^24] (vocab_size by magnitude),
// dim % n_heads == 0, n_heads % n_kv_heads == 0, and the file size exactly
// what the config needs (the error states expected and actual bytes).
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "radix/io/weight_store.h"

namespace radix::io {

inline constexpr size_t kLlama2cHeaderBytes = 28;

struct Llama2cConfig {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // always positive here; see shared_classifier
  int32_t seq_len = 0;
  bool shared_classifier = true;  // the header's vocab_size was positive

  int32_t head_size() const { return dim / n_heads; }
  int32_t kv_dim() const { return dim / n_heads * n_kv_heads; }
  bool operator==(const Llama2cConfig&) const = default;
};

// Parses and checks the 28-byte header (`path` only names the file in
// errors). kInvalidArgument naming the bad field.
Result<Llama2cConfig> parse_llama2c_header(std::span<const std::byte> header, const std::string& path);
// The exact file size a checkpoint with `config` has (UINT64_MAX if past it).
uint64_t llama2c_file_bytes(const Llama2cConfig& config);
// Writes `config` as the llama2c.* metadata keys (llama2c.dim, ...,
// llama2c.shared_classifier) that a llama2.c store carries and that
// models::llama_config_from reads back.
void add_llama2c_metadata(const Llama2cConfig& config, std::map<std::string, std::string>& metadata);

class Llama2cStore : public BasicWeightStore {
 public:
  Llama2cStore(std::string path, const Llama2cConfig& config)
      : BasicWeightStore(std::move(path), "llama2c"), config_(config) {}
  const Llama2cConfig& config() const { return config_; }

 private:
  Llama2cConfig config_;
};

Result<std::unique_ptr<Llama2cStore>> open_llama2c(const std::string& path);

}  // namespace radix::io
