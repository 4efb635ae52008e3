#include "radix/models/llama/llama.h"

#include <cstdlib>
#include <map>
#include <tuple>

#include "radix/api/call.h"
#include "radix/nn/attention.h"
#include "radix/nn/norm.h"
#include "radix/trace/ops.h"
#include "radix/trace/ops_activation.h"
#include "radix/trace/ops_layout.h"
#include "radix/trace/ops_shard.h"

namespace radix::models {

namespace {

// x[..., in] · w[out, in]ᵀ -> [..., out]; w quantized when `scales` holds
// its scales (entry `i`).
// `acts`: how a quantized product treats x (LlamaConfig::quantized_activations).
Tensor proj(const Tensor& x, const Tensor& w, const std::vector<Tensor>& scales, size_t i, QuantizedActivations acts) {
  if (!scales.empty()) return quantized_matmul(x, w, scales[i], QuantizedMatmulOptions{acts});
  return dot_general(x, w, DotDims{{}, {}, {x.rank() - 1}, {1}});
}

// One decoder layer, a pure function of its arguments (the function cache
// keys it by shapes and the plain values): x [1, s, dim] -> x, and the
// layer's caches with this step's keys / values written (donated).
// Under tensor parallelism (tp > 1) the layer holds n_heads of the model's
// heads and its share of the hidden axis: wo and w2 multiply those parts
// (row-parallel), and an all-reduce over the devices sums them.
std::tuple<Tensor, Tensor, Tensor> layer_forward(const LlamaLayer<Tensor>& l, Tensor x, Tensor cache_k,
                                                 Tensor cache_v, Tensor pos, Tensor rope_cos, Tensor rope_sin,
                                                 int64_t n_heads, int64_t n_kv_heads, int64_t hd, int64_t tp,
                                                 double eps, nn::RopeLayout layout, QuantizedActivations acts) {
  const int64_t s = x.dim(1);
  auto sum_parts = [tp](const Tensor& partial) { return tp > 1 ? all_reduce(partial, kTensorParallelAxis) : partial; };
  Tensor h = nn::rms_norm(x, l.attention_norm, -1, eps);
  using L = LlamaLayer<Tensor>;
  const std::vector<Tensor>& sc = l.scales;
  Tensor q = reshape(proj(h, l.wq, sc, L::kScaleQ, acts), {1, s, n_heads, hd});
  Tensor k = reshape(proj(h, l.wk, sc, L::kScaleK, acts), {1, s, n_kv_heads, hd});
  Tensor v = reshape(proj(h, l.wv, sc, L::kScaleV, acts), {1, s, n_kv_heads, hd});
  nn::RopeOptions ro;
  ro.layout = layout;
  const nn::RopeTable table{rope_cos, rope_sin};  // computed once per forward, for every layer
  q = nn::rope(q, table, ro);
  k = nn::rope(k, table, ro);
  nn::CachedAttentionOptions ao;
  ao.layout = nn::CacheLayout::kHeadMajor;  // a decode step reads the cache in place
  nn::CachedAttention<> a = nn::cached_attention(q, k, v, cache_k, cache_v, pos, ao);
  x = x + sum_parts(proj(reshape(a.out, {1, s, n_heads * hd}), l.wo, sc, L::kScaleO, acts));
  Tensor h2 = nn::rms_norm(x, l.ffn_norm, -1, eps);
  Tensor gated = silu(proj(h2, l.w1, sc, L::kScale1, acts)) * proj(h2, l.w3, sc, L::kScale3, acts);
  x = x + sum_parts(proj(gated, l.w2, sc, L::kScale2, acts));
  return {x, a.cache_k.reuse_buffer(cache_k), a.cache_v.reuse_buffer(cache_v)};
}

int64_t meta_int(const std::map<std::string, std::string>& m, const std::string& key, Status* err) {
  auto it = m.find(key);
  if (it == m.end()) {
    if (err->ok()) *err = invalid_argument("missing metadata '" + key + "'");
    return 0;
  }
  return std::strtoll(it->second.c_str(), nullptr, 10);
}

}  // namespace

Status LlamaConfig::validate() const {
  if (dim <= 0 || hidden_dim <= 0 || n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || vocab_size <= 0 ||
      seq_len <= 0)
    return invalid_argument("llama config: every size must be positive (" + to_string() + ")");
  if (weight_dtype != dtype && !(dtype == DType::kF32 && is_half_float(weight_dtype)))
    return invalid_argument("llama config: weight dtype " + std::string(dtype_name(weight_dtype)) +
                            " with activations in " + std::string(dtype_name(dtype)) +
                            ": the weights must match the activations, or be bf16 / f16 under f32");
  if (kv_dtype && !(*kv_dtype == dtype || (dtype == DType::kF32 && is_half_float(*kv_dtype))))
    return invalid_argument("llama config: KV cache dtype " + std::string(dtype_name(*kv_dtype)) +
                            " with activations in " + std::string(dtype_name(dtype)) +
                            ": the cache must match the activations, or be bf16 / f16 under f32");
  if (weight_quant && dtype != DType::kF32)
    return invalid_argument("llama config: quantized weights need f32 activations, not " +
                            std::string(dtype_name(dtype)));
  if (weight_quant && *weight_quant != QuantFormat::kInt8PerChannel && (dim % 32 != 0 || hidden_dim % 32 != 0))
    return invalid_argument("llama config: Q8_0 / Q4_0 weights need dim and hidden_dim multiples of 32 (" +
                            to_string() + "); int8 takes any size");
  if (dim % n_heads != 0 || n_heads % n_kv_heads != 0 || head_dim() % 2 != 0)
    return invalid_argument("llama config: dim must split into n_heads even-sized heads and n_heads into n_kv_heads "
                            "groups (" + to_string() + ")");
  if (tensor_parallel < 1 || n_kv_heads % tensor_parallel != 0 || hidden_dim % tensor_parallel != 0)
    return invalid_argument("llama config: tensor parallelism over " + std::to_string(tensor_parallel) +
                            " devices needs n_kv_heads and hidden_dim divisible by it (" + to_string() + ")");
  if (weight_quant && *weight_quant != QuantFormat::kInt8PerChannel && tensor_parallel > 1 &&
      ((local_heads() * head_dim()) % 32 != 0 || local_hidden() % 32 != 0))
    return invalid_argument("llama config: Q8_0 / Q4_0 weights split over " + std::to_string(tensor_parallel) +
                            " devices need each device's part of wo and w2 to be a multiple of 32 wide (" +
                            to_string() + ")");
  if ((weight_quant == QuantFormat::kQ4_0x16 || weight_quant == QuantFormat::kQ8_0x16) &&
      (dim % 16 != 0 || kv_dim() % 16 != 0 || hidden_dim % 16 != 0 || vocab_size % 16 != 0 || tensor_parallel != 1))
    return invalid_argument("llama config: x16 weights (16 rows interleaved) need dim, the key / value width, "
                            "hidden_dim and vocab multiples of 16 and one device (" + to_string() + ")");
  return Status();
}

std::string LlamaConfig::to_string() const {
  return "dim " + std::to_string(dim) + ", hidden " + std::to_string(hidden_dim) + ", " + std::to_string(n_layers) +
         " layers, " + std::to_string(n_heads) + " heads (" + std::to_string(n_kv_heads) + " kv), vocab " +
         std::to_string(vocab_size) + ", seq " + std::to_string(seq_len) +
         (tensor_parallel > 1 ? ", tensor-parallel over " + std::to_string(tensor_parallel) : "");
}

Result<LlamaConfig> llama_config_from(const io::WeightStore& store) {
  const auto& m = store.metadata();
  LlamaConfig c;
  Status err;
  if (m.count("llama2c.dim")) {  // a llama2.c checkpoint, or a conversion of one
    c.dim = meta_int(m, "llama2c.dim", &err);
    c.hidden_dim = meta_int(m, "llama2c.hidden_dim", &err);
    c.n_layers = meta_int(m, "llama2c.n_layers", &err);
    c.n_heads = meta_int(m, "llama2c.n_heads", &err);
    c.n_kv_heads = meta_int(m, "llama2c.n_kv_heads", &err);
    c.vocab_size = meta_int(m, "llama2c.vocab_size", &err);
    c.seq_len = meta_int(m, "llama2c.seq_len", &err);
    auto shared = m.find("llama2c.shared_classifier");
    c.tied_classifier = shared == m.end() || shared->second == "true";
  } else if (auto arch = m.find("general.architecture"); arch != m.end() && arch->second == "llama") {
    // GGUF (llama.cpp): consecutive-pair RoPE, as llama2.c.
    c.dim = meta_int(m, "llama.embedding_length", &err);
    c.hidden_dim = meta_int(m, "llama.feed_forward_length", &err);
    c.n_layers = meta_int(m, "llama.block_count", &err);
    c.n_heads = meta_int(m, "llama.attention.head_count", &err);
    c.n_kv_heads = m.count("llama.attention.head_count_kv") ? meta_int(m, "llama.attention.head_count_kv", &err)
                                                           : c.n_heads;
    c.seq_len = meta_int(m, "llama.context_length", &err);
    if (auto e = m.find("llama.attention.layer_norm_rms_epsilon"); e != m.end()) c.norm_eps = std::strtod(e->second.c_str(), nullptr);
    if (auto t = m.find("llama.rope.freq_base"); t != m.end()) c.rope_theta = std::strtod(t->second.c_str(), nullptr);
    const io::TensorInfo* emb = store.find("token_embd.weight");
    if (!emb || emb->shape.rank() != 2) return invalid_argument("weights " + store.path() + ": no 2-D token_embd.weight");
    c.vocab_size = emb->shape.dim(0);
    c.tied_classifier = store.find("output.weight") == nullptr;
  } else {
    return invalid_argument("weights " + store.path() + " (" + store.format() +
                            "): no Llama hyper-parameters found (expected llama2c.* metadata or a GGUF "
                            "general.architecture = llama)");
  }
  if (!err.ok()) return invalid_argument("weights " + store.path() + ": " + err.message());
  RADIX_RETURN_IF_ERROR(c.validate());
  return c;
}

std::function<std::string(const std::string&)> llama_weight_names(const io::WeightStore& store) {
  if (store.metadata().count("llama2c.dim") || !store.find("token_embd.weight"))
    return [](const std::string& path) { return path; };
  const bool tied = store.find("output.weight") == nullptr;
  return [tied](const std::string& path) -> std::string {
    static const std::map<std::string, std::string> top = {
        {"tok_embeddings", "token_embd.weight"}, {"norm", "output_norm.weight"}, {"output", "output.weight"}};
    static const std::map<std::string, std::string> layer = {
        {"attention_norm", "attn_norm"}, {"attention.wq", "attn_q"},        {"attention.wk", "attn_k"},
        {"attention.wv", "attn_v"},      {"attention.wo", "attn_output"},   {"ffn_norm", "ffn_norm"},
        {"feed_forward.w1", "ffn_gate"}, {"feed_forward.w2", "ffn_down"},   {"feed_forward.w3", "ffn_up"}};
    if (path == "output" && tied) return "token_embd.weight";
    if (auto it = top.find(path); it != top.end()) return it->second;
    // "layers.<i>.<rest>" -> "blk.<i>.<gguf name>.weight"
    if (path.rfind("layers.", 0) == 0) {
      size_t dot = path.find('.', 7);
      if (dot != std::string::npos)
        if (auto it = layer.find(path.substr(dot + 1)); it != layer.end())
          return "blk." + path.substr(7, dot - 7) + "." + it->second + ".weight";
    }
    return path;
  };
}

Llama<Shape> llama_shapes(const LlamaConfig& c) {
  const DType d = c.weight_dtype;  // matrices; norms in c.dtype
  Llama<Shape> m;
  m.config = c;
  m.tok_embeddings = Shape(d, {c.vocab_size, c.dim});
  m.norm = Shape(c.dtype, {c.dim});
  m.output = Shape(d, {c.vocab_size, c.dim});
  if (c.weight_quant) {
    m.output_scales.push_back(quantized_scales_shape(*c.weight_quant, c.vocab_size, c.dim));
    m.output = quantized_values_shape(*c.weight_quant, c.vocab_size, c.dim);
  }
  for (int64_t i = 0; i < c.n_layers; ++i) {
    LlamaLayer<Shape> l;
    l.attention_norm = l.ffn_norm = Shape(c.dtype, {c.dim});
    const int64_t q_rows = c.local_heads() * c.head_dim(), kv_rows = c.local_kv_heads() * c.head_dim();
    l.wq = Shape(d, {q_rows, c.dim});
    l.wo = Shape(d, {c.dim, q_rows});
    l.wk = l.wv = Shape(d, {kv_rows, c.dim});
    l.w1 = l.w3 = Shape(d, {c.local_hidden(), c.dim});
    l.w2 = Shape(d, {c.dim, c.local_hidden()});
    if (c.weight_quant) {
      for (Shape* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) {
        l.scales.push_back(quantized_scales_shape(*c.weight_quant, w->dim(0), w->dim(1)));
        *w = quantized_values_shape(*c.weight_quant, w->dim(0), w->dim(1));
      }
    }
    m.layers.push_back(l);
  }
  return m;
}

KvCache<Shape> kv_cache_shapes(const LlamaConfig& c) {
  KvCache<Shape> kv;
  Shape s(c.cache_dtype(), {1, c.local_kv_heads(), c.seq_len, c.head_dim()});  // head-major (nn::CacheLayout)
  kv.k.assign(static_cast<size_t>(c.n_layers), s);
  kv.v.assign(static_cast<size_t>(c.n_layers), s);
  return kv;
}

template <>
LlamaStep<Tensor> Llama<Tensor>::forward(const Tensor& tokens, const KvCache<Tensor>& cache, const Tensor& pos) const {
  const LlamaConfig& c = config;
  Tensor x = convert(embedding(tok_embeddings, tokens), c.dtype);  // [1, s, dim]
  LlamaStep<Tensor> out;
  nn::RopeOptions ro;
  ro.theta = c.rope_theta;
  const nn::RopeTable rope = nn::rope_table(pos, tokens.dim(1), c.head_dim(), ro);
  for (size_t i = 0; i < layers.size(); ++i) {
    auto [y, k, v] = call("llama_layer", &layer_forward, layers[i], x, cache.k[i], cache.v[i], pos, rope.cos,
                          rope.sin, c.local_heads(), c.local_kv_heads(), c.head_dim(), c.tensor_parallel, c.norm_eps,
                          c.rope_layout, c.quantized_activations);
    x = y;
    out.cache.k.push_back(k);
    out.cache.v.push_back(v);
  }
  const int64_t s = tokens.dim(1);
  Tensor last = reshape(slice(x, 1, s - 1, s), {1, c.dim});
  out.logits = convert(
      proj(nn::rms_norm(last, norm, -1, c.norm_eps), output, output_scales, 0, c.quantized_activations), DType::kF32);
  return out;
}

}  // namespace radix::models
