// A Llama-2/3-style decoder built from the nn layers: RMSNorm, rotary
// embeddings, grouped-query attention over a KV cache, SwiGLU feed-forward,
// a tied or untied classifier. Batch 1.
//
// One forward serves both phases: compiled with tokens [1, s] it is the
// prefill of an s-token prompt, with [1, 1] the one-token decode step. Both
// executables share the weights and the KV cache, which is donated to every
// call (updated in place). Each layer goes through the function cache, so
// the traced module holds one layer function called n_layers times.
//
// Weight names (the visit() paths, also the llama2.c store's names):
//   tok_embeddings [vocab, dim]            norm [dim]          output [vocab, dim]
//   layers.{i}.attention_norm [dim]        layers.{i}.ffn_norm [dim]
//   layers.{i}.attention.wq [dim, dim]     .wk / .wv [kv_dim, dim]   .wo [dim, dim]
//   layers.{i}.feed_forward.w1 / .w3 [hidden, dim]   .w2 [dim, hidden]
// Matrices are [out, in] (PyTorch's Linear layout): y = x · wᵀ.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "radix/core/status.h"
#include "radix/io/weight_store.h"
#include "radix/nn/rope.h"
#include "radix/trace/ops_quant.h"
#include "radix/trace/tensor.h"

namespace radix::models {

// The mesh axis a tensor-parallel Llama splits over (LlamaConfig::tensor_parallel).
inline constexpr const char* kTensorParallelAxis = "model";

struct LlamaConfig {
  int64_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0;
  int64_t seq_len = 0;      // the longest sequence (KV cache length)
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  nn::RopeLayout rope_layout = nn::RopeLayout::kInterleaved;  // llama2.c: consecutive pairs
  bool tied_classifier = true;                                // output shares tok_embeddings' bytes
  DType dtype = DType::kF32;         // activations, norms and the KV cache
  // The matrices (embeddings, projections, classifier): dtype, or bf16 / f16
  // under f32 activations — half the bytes, products widened to f32 inside
  // each contraction (decode reads every weight once per token).
  DType weight_dtype = DType::kF32;
  // Set: the layers' projections and the classifier are kept quantized in
  // memory (trace/ops_quant.h: int8 per channel, Q8_0, Q4_0; the Q formats
  // need dim and hidden_dim multiples of 32) and widened in registers by
  // every product; embeddings stay in weight_dtype, activations in f32.
  std::optional<QuantFormat> weight_quant;
  // The KV cache's dtype; unset: dtype. bf16 / f16 under f32 activations
  // halve the cache's bytes (llama.cpp keeps f16 by default): keys and
  // values are rounded to it as they are written, and attention widens
  // them back to f32 in registers as it reads them.
  std::optional<DType> kv_dtype;
  // With weight_quant: how decode steps' products treat the activations
  // (trace/ops_quant.h): int8 blocks of 32 (llama.cpp's way, integer dot
  // products) or f32 (exact products with the quantized weights).
  QuantizedActivations quantized_activations = QuantizedActivations::kInt8Blocks;
  // Tensor parallelism (Megatron): the number of devices (MPI processes)
  // the attention heads and the feed-forward's hidden axis are split over.
  // Above 1, a Llama<T> holds one device's part — its heads' rows of wq /
  // wk / wv and columns of wo, its rows of w1 / w3 and columns of w2, its
  // heads' KV cache — and forward() is one device's program (traced with
  // TraceOptions::Partitioning::kManual on a mesh axis named
  // kTensorParallelAxis), all-reducing the partial sums of wo and w2.
  int64_t tensor_parallel = 1;

  DType cache_dtype() const { return kv_dtype.value_or(dtype); }
  int64_t head_dim() const { return dim / n_heads; }
  int64_t kv_dim() const { return head_dim() * n_kv_heads; }
  // One device's share under tensor_parallel (the whole model at 1).
  int64_t local_heads() const { return n_heads / tensor_parallel; }
  int64_t local_kv_heads() const { return n_kv_heads / tensor_parallel; }
  int64_t local_hidden() const { return hidden_dim / tensor_parallel; }
  // Checks the sizes fit together (heads divide dim, kv heads divide heads, ...).
  Status validate() const;
  std::string to_string() const;  // "dim 64, hidden 172, 5 layers, 8 heads (4 kv), vocab 512, seq 512"
};

// The hyper-parameters a weight store describes (the model's "init"): the
// llama2.c header (llama2c.* metadata, kept by radix convert), or a GGUF
// file's llama.* keys. kInvalidArgument naming what is missing.
Result<LlamaConfig> llama_config_from(const io::WeightStore& store);

// The store name of a model path: the identity for llama2.c / converted
// stores, llama.cpp's names for GGUF ("layers.3.attention.wq" ->
// "blk.3.attn_q.weight", "tok_embeddings" -> "token_embd.weight", a tied
// "output" -> "token_embd.weight").
std::function<std::string(const std::string&)> llama_weight_names(const io::WeightStore& store);

template <class T>
struct LlamaLayer {
  T attention_norm, wq, wk, wv, wo;
  T ffn_norm, w1, w2, w3;
  // With LlamaConfig::weight_quant: the matrices above hold the quantized
  // values and these their scales, for wq, wk, wv, wo, w1, w2, w3 in that
  // order (kScale* below). Empty otherwise.
  std::vector<T> scales;
  enum : size_t { kScaleQ, kScaleK, kScaleV, kScaleO, kScale1, kScale2, kScale3 };
  // The seven matrices in the scales' order (kScaleQ .. kScale3).
  std::array<T*, 7> matrices() { return {&wq, &wk, &wv, &wo, &w1, &w2, &w3}; }
  std::array<const T*, 7> matrices() const { return {&wq, &wk, &wv, &wo, &w1, &w2, &w3}; }
  template <class V> void visit(V&& v) {
    v("attention_norm", attention_norm);
    v("attention.wq", wq);
    v("attention.wk", wk);
    v("attention.wv", wv);
    v("attention.wo", wo);
    v("ffn_norm", ffn_norm);
    v("feed_forward.w1", w1);
    v("feed_forward.w2", w2);
    v("feed_forward.w3", w3);
    v("scales", scales);
  }
};

template <class T>
struct KvCache {
  std::vector<T> k, v;  // per layer: [1, n_kv_heads, seq_len, head_dim] (head-major), cache_dtype()
  template <class V> void visit(V&& vis) { vis("k", k); vis("v", v); }
};

template <class T>
struct LlamaStep {
  T logits;  // [1, vocab] f32, for the last token of the step
  KvCache<T> cache;
  template <class V> void visit(V&& v) { v("logits", logits); v("cache", cache); }
};

template <class T>
struct Llama {
  T tok_embeddings;
  std::vector<LlamaLayer<T>> layers;
  T norm, output;
  std::vector<T> output_scales;  // with LlamaConfig::weight_quant: output's scales (one), else empty
  LlamaConfig config;  // not a leaf: set before tracing

  template <class V> void visit(V&& v) {
    v("tok_embeddings", tok_embeddings);
    v("layers", layers);
    v("norm", norm);
    v("output", output);
    v("output_scales", output_scales);
  }
  // tokens i32 [1, s], cache (donated), pos: i32 scalar, the position of
  // tokens[0]. Writes the step's keys / values at [pos, pos + s) and returns
  // the logits of the last token. Defined for T = Tensor.
  LlamaStep<Tensor> forward(const Tensor& tokens, const KvCache<Tensor>& cache, const Tensor& pos) const;
};

template <>
LlamaStep<Tensor> Llama<Tensor>::forward(const Tensor& tokens, const KvCache<Tensor>& cache, const Tensor& pos) const;

// The weight shapes of a configuration (one device's part under
// tensor_parallel, see LlamaConfig).
Llama<Shape> llama_shapes(const LlamaConfig& config);
// The KV cache's shapes (seq_len positions; one device's heads).
KvCache<Shape> kv_cache_shapes(const LlamaConfig& config);

}  // namespace radix::models
