#include "radix/models/llama/generator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "radix/io/gguf.h"
#include "radix/io/quantize.h"
#include "radix/nn/sampler.h"
#include "radix/runtime/distributed.h"

namespace radix::models {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
// Replaces each projection matrix and the classifier of `w` (f32 [out, in])
// by its quantized values and appends its scales (llama.h's order). Up to
// kQuantizeWidth matrices at a time, each quantized on a thread of its own
// (their host copies are made and their buffers created on the calling
// thread, which the device's API may require).
constexpr size_t kQuantizeWidth = 8;  // host f32 copies alive at once, at most
Status quantize_matrices(const Platform& platform, QuantFormat f, Llama<Buffer>& w) {
  std::vector<std::pair<Buffer*, std::vector<Buffer>*>> all;  // a matrix, its scales' list
  for (LlamaLayer<Buffer>& l : w.layers)
    for (Buffer* m : l.matrices()) all.emplace_back(m, &l.scales);
  all.emplace_back(&w.output, &w.output_scales);
  const size_t width = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kQuantizeWidth);
  for (size_t first = 0; first < all.size(); first += width) {
    const size_t count = std::min(width, all.size() - first);
    std::vector<std::vector<float>> host(count);
    for (size_t i = 0; i < count; ++i) {
      RADIX_ASSIGN_OR_RETURN(host[i], all[first + i].first->to_host<float>());
    }
    std::vector<Result<io::QuantizedMatrix>> q;
    for (size_t i = 0; i < count; ++i) q.emplace_back(runtime_error("llama: matrix not quantized"));
    auto run = [&](size_t i) {
      const Shape& s = all[first + i].first->shape();
      q[i] = io::quantize(f, host[i], s.dim(0), s.dim(1));
    };
    std::vector<std::thread> threads;
    for (size_t i = 1; i < count; ++i) threads.emplace_back(run, i);
    run(0);
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < count; ++i) {
      if (!q[i].ok()) return q[i].status();
      RADIX_ASSIGN_OR_RETURN(Buffer values, platform.bytes(q[i]->values_shape, q[i]->values));
      RADIX_ASSIGN_OR_RETURN(Buffer scales, platform.bytes(q[i]->scales_shape, q[i]->scales));
      *all[first + i].first = std::move(values);
      all[first + i].second->push_back(std::move(scales));
    }
  }
  return Status();
}

// The x16 format (trace/ops_quant.h) the Q4_0 / Q8_0 matrices of a model
// with `c` are better held in here, if any: the CPU's row-group kernels
// read its interleaved rows as they are (x86 with AVX2; integer or f32
// activations), and every matrix has whole groups of 16 rows (one device). Measured on
// Zen 5, decode tok/s, one process alternating the layouts: Q4_0x16
// decodes stories110M 1.44x faster than Q4_0 rows; Q8_0 rows -> Q8_0x16:
// stories15M (15.4 MiB, in the LLC) 2122-2205 -> 3280-3320 on one core,
// 2908-3462 -> 4632-4835 on two, and the same code for Zen 3 (AVX2)
// 1676-1703 -> 2766-2775 and 1894-2910 -> 4313-4380; stories110M (111
// MiB, from memory) with 512-bit VNNI 221-235 -> 223-232 on one core,
// 261-279 -> 278-322 on two, and for Zen 3 214 -> 269 on one core, 294 ->
// 290 on two. Q8_0 prompts run the x16 kernel either way (plain rows are
// rewritten per call on the stack: int8_dot_kernels_pass.cc).
// With f32 activations (f32_rows_kernel.cc), Zen 5, one core, plain rows ->
// x16: decode stories15M Q8_0 1048-1058 -> 1450-1451 tok/s, Q4_0 1037-1041
// -> 1351-1354; stories110M Q8_0 148-149 -> 179-196, Q4_0 123-126 -> 185
// (the plain rows with one Q8_0 row per tile; with four, Q8_0 read 67);
// prompts of 128 tokens (plain rows dequantize W per call, x16 ones one
// row group at a time on the stack): stories110M Q4_0 543-546 -> 608-609,
// Q8_0 544-558 -> 585-596 (two cores 982 -> 1142, 1018 -> 1051; Zen 3's
// code 528 -> 591, 541 -> 586), stories15M Q4_0 6589-7008 -> 7589-7624,
// Q8_0 6151-6636 -> 7417-7422.
std::optional<QuantFormat> rows_format(const Platform& platform, const LlamaConfig& c) {
  if ((c.weight_quant != QuantFormat::kQ4_0 && c.weight_quant != QuantFormat::kQ8_0) || platform.name() != "cpu")
    return std::nullopt;
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2")) return std::nullopt;
#else
  return std::nullopt;
#endif
  LlamaConfig x16 = c;
  x16.weight_quant = c.weight_quant == QuantFormat::kQ4_0 ? QuantFormat::kQ4_0x16 : QuantFormat::kQ8_0x16;
  return x16.validate().ok() ? x16.weight_quant : std::nullopt;
}

// The model paths of the matrices quantize_matrices replaces, in its order.
std::vector<std::string> matrix_paths(size_t layers) {
  std::vector<std::string> out;
  for (size_t i = 0; i < layers; ++i)
    for (const char* m : {"attention.wq", "attention.wk", "attention.wv", "attention.wo", "feed_forward.w1",
                          "feed_forward.w2", "feed_forward.w3"})
      out.push_back("layers." + std::to_string(i) + "." + m);
  out.push_back("output");
  return out;
}

// Every matrix of the GGUF store `gguf` is in `f`'s blocks (Q8_0 / Q4_0).
bool all_matrices_in(const io::GgufStore& gguf, const LoadOptions& lo, size_t layers, QuantFormat f) {
  const io::GgmlType want = f == QuantFormat::kQ8_0 ? io::GgmlType::kQ8_0 : io::GgmlType::kQ4_0;
  for (const std::string& path : matrix_paths(layers))
    if (gguf.file_type(lo.name_map(path)) != want) return false;
  return true;
}

// A GGUF Q8_0 / Q4_0 model's weights with the matrices taken from the
// file's blocks (split into values and scales, as quantize_matrices leaves
// them; `interleave`: then their rows interleaved by 16 on the host, as
// rows_format says): no f32 copy of them is made (stories110M Q4_0: the
// store's dequantization and the requantization took 5.5 s of a 5.9 s load).
// Everything else (embeddings, norms) loads as `shapes` says.
Result<Llama<Buffer>> load_gguf_blocks(const Platform& platform, const Llama<Shape>& shapes,
                                       const io::GgufStore& gguf, const LoadOptions& lo, QuantFormat f,
                                       bool interleave) {
  const std::vector<std::string> paths = matrix_paths(shapes.layers.size());
  std::vector<std::pair<std::string, Shape>> wanted;
  for_each_leaf<Shape>(shapes, [&](const std::string& path, const Shape& s) {
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) wanted.emplace_back(path, s);
  });
  RADIX_ASSIGN_OR_RETURN(std::vector<Buffer> rest, load_tensors(platform, wanted, gguf, lo));
  size_t next = 0;
  Llama<Buffer> w = map_leaves<Buffer>(shapes, [&](const std::string& path, const Shape&) {
    return std::find(paths.begin(), paths.end(), path) == paths.end() ? std::move(rest[next++]) : Buffer();
  });
  const auto t0 = Clock::now();
  uint64_t bytes = 0;
  auto load = [&](const std::string& path, const Shape& s, Buffer& m, std::vector<Buffer>& scales) -> Status {
    RADIX_ASSIGN_OR_RETURN(std::span<const std::byte> blocks, gguf.blocks(lo.name_map(path)));
    const int64_t n = s.dim(0), k = s.dim(1);
    RADIX_ASSIGN_OR_RETURN(io::QuantizedMatrix q, f == QuantFormat::kQ8_0 ? io::split_gguf_q8_0(blocks, n, k)
                                                                           : io::split_gguf_q4_0(blocks, n, k));
    if (interleave) {
      RADIX_ASSIGN_OR_RETURN(q, io::interleave_rows(q));
    }
    RADIX_ASSIGN_OR_RETURN(m, platform.bytes(q.values_shape, q.values));
    RADIX_ASSIGN_OR_RETURN(Buffer sc, platform.bytes(q.scales_shape, q.scales));
    scales.push_back(std::move(sc));
    bytes += blocks.size();
    return Status();
  };
  for (size_t i = 0; i < w.layers.size(); ++i) {
    LlamaLayer<Buffer>& l = w.layers[i];
    const std::array<Buffer*, 7> ms = l.matrices();
    const std::array<const Shape*, 7> ss = shapes.layers[i].matrices();
    for (size_t j = 0; j < ms.size(); ++j) RADIX_RETURN_IF_ERROR(load(paths[i * ms.size() + j], *ss[j], *ms[j], l.scales));
  }
  RADIX_RETURN_IF_ERROR(load("output", shapes.output, w.output, w.output_scales));
  if (lo.progress)
    std::fprintf(stderr, "weights: %zu matrices kept as %s blocks%s, %.2f MiB in %.1f ms\n", paths.size(),
                 quant_format_name(f), interleave ? " (rows interleaved by 16)" : "",
                 static_cast<double>(bytes) / 1048576.0, ms_since(t0));
  return w;
}

// Part `index` of `parts` of a 2-D buffer along `axis` (0: rows, 1:
// columns), as a new buffer of that part's shape.
Result<Buffer> split_matrix(const Platform& platform, const Buffer& m, int axis, int64_t parts, int64_t index) {
  const Shape& s = m.shape();
  const int64_t cols = s.dim(1), elem = static_cast<int64_t>(dtype_size(s.dtype()));
  std::vector<std::byte> whole(s.byte_size());
  RADIX_RETURN_IF_ERROR(m.copy_to_host(whole));
  const Shape part = s.with_dim(axis, s.dim(axis) / parts);
  std::vector<std::byte> out(part.byte_size());
  const int64_t r0 = axis == 0 ? index * part.dim(0) : 0, c0 = axis == 1 ? index * part.dim(1) : 0;
  const size_t row_bytes = static_cast<size_t>(part.dim(1) * elem);
  for (int64_t r = 0; r < part.dim(0); ++r)
    std::memcpy(out.data() + static_cast<size_t>(r) * row_bytes,
                whole.data() + static_cast<size_t>(((r0 + r) * cols + c0) * elem), row_bytes);
  return platform.bytes(part, out);
}

// This device's part of whole weights under tensor parallelism: its heads'
// rows of wq / wk / wv and columns of wo, its rows of w1 / w3 and columns
// of w2 (llama.h); norms, embeddings and the classifier stay whole.
Status keep_tensor_parallel_part(const Platform& platform, const LlamaConfig& c, int64_t rank, Llama<Buffer>& w) {
  const int64_t tp = c.tensor_parallel;
  for (LlamaLayer<Buffer>& l : w.layers) {
    for (Buffer* m : {&l.wq, &l.wk, &l.wv, &l.w1, &l.w3}) {
      RADIX_ASSIGN_OR_RETURN(Buffer part, split_matrix(platform, *m, 0, tp, rank));
      *m = std::move(part);
    }
    for (Buffer* m : {&l.wo, &l.w2}) {
      RADIX_ASSIGN_OR_RETURN(Buffer part, split_matrix(platform, *m, 1, tp, rank));
      *m = std::move(part);
    }
  }
  return Status();
}

}  // namespace

int64_t prefill_tokens(int64_t prompt_size, const GenerateOptions& options, int64_t seq_len) {
  return std::min(prompt_size, std::max<int64_t>(std::min(options.steps, seq_len), 1));
}

Result<std::unique_ptr<LlamaGenerator>> LlamaGenerator::load(const Platform& platform, const io::WeightStore& store,
                                                             const Options& options) {
  auto t0 = Clock::now();
  std::unique_ptr<LlamaGenerator> g(new LlamaGenerator());
  g->platform_ = platform;
  g->options_ = options;
  RADIX_ASSIGN_OR_RETURN(g->config_, llama_config_from(store));
  LoadOptions lo = options.load;
  if (!lo.name_map) lo.name_map = llama_weight_names(store);
  if (options.weight_dtype) {
    g->config_.weight_dtype = *options.weight_dtype;
  } else if (const io::TensorInfo* wq = store.find(lo.name_map("layers.0.attention.wq"));
             wq && is_half_float(wq->shape.dtype()) && g->config_.dtype == DType::kF32) {
    g->config_.weight_dtype = wq->shape.dtype();
  }
  if (options.weight_quant) {
    if (options.weight_dtype && *options.weight_dtype != DType::kF32)
      return invalid_argument("llama: weight_quant quantizes the matrices; weight_dtype must be unset or f32, not " +
                              std::string(dtype_name(*options.weight_dtype)));
    g->config_.weight_dtype = DType::kF32;
    g->config_.weight_quant = options.weight_quant;
  }
  bool from_file_blocks = false;  // the GGUF file's own blocks give weight_quant
  if (!options.weight_dtype && !options.weight_quant) {
    // GGUF Q8_0 / Q4_0 projections stay quantized (requantizing the loader's
    // f32 values gives back the file's blocks), when every matrix can.
    if (store.format() == "gguf") {  // io::open_gguf's store (libradix has no RTTI)
      const auto* gguf = static_cast<const io::GgufStore*>(&store);
      const std::optional<io::GgmlType> t = gguf->file_type(lo.name_map("layers.0.attention.wq"));
      LlamaConfig q = g->config_;
      q.weight_quant = t == io::GgmlType::kQ8_0 ? std::optional(QuantFormat::kQ8_0)
                       : t == io::GgmlType::kQ4_0 ? std::optional(QuantFormat::kQ4_0)
                                                  : std::nullopt;
      if (q.weight_quant && q.validate().ok()) {
        g->config_ = q;
        from_file_blocks = true;
      }
    }
  }
  g->config_.quantized_activations = options.quantized_activations;
  g->config_.kv_dtype = options.kv_dtype;
  // Quantized matrices under int8 activations: an f16 cache by default (see
  // Options::kv_dtype). At stories110M Q4_0's decode positions 128-192 the
  // f32 cache is 9-14 MB read per token beside 62 MB of weights.
  if (!options.kv_dtype && g->config_.weight_quant && g->config_.dtype == DType::kF32 &&
      options.quantized_activations == QuantizedActivations::kInt8Blocks)
    g->config_.kv_dtype = DType::kF16;
  if (options.tensor_parallel < 1)
    return invalid_argument("llama: tensor_parallel must be >= 1, got " + std::to_string(options.tensor_parallel));
  g->config_.tensor_parallel = options.tensor_parallel;
  RADIX_RETURN_IF_ERROR(g->config_.validate());
  if (g->config_.tensor_parallel > 1)
    RADIX_RETURN_IF_ERROR(distributed::require_size(g->config_.tensor_parallel, "a tensor-parallel Llama"));
  LlamaConfig plain = g->config_;  // what the store holds: whole, unquantized matrices
  plain.weight_quant.reset();
  plain.tensor_parallel = 1;
  Llama<Shape> shapes = llama_shapes(plain);
  // A GGUF file's own Q8_0 / Q4_0 blocks, kept as they are (one device).
  const io::GgufStore* blocks_from =
      from_file_blocks && g->config_.tensor_parallel == 1 &&
              all_matrices_in(*static_cast<const io::GgufStore*>(&store), lo, shapes.layers.size(),
                              *g->config_.weight_quant)
          ? static_cast<const io::GgufStore*>(&store)
          : nullptr;
  // The layout the quantized matrices are held in: their rows interleaved
  // by 16 where the CPU's kernels read them so, made on the host as they
  // are split or quantized.
  const std::optional<QuantFormat> rows = options.interleave_rows ? rows_format(platform, g->config_) : std::nullopt;
  Llama<Buffer> w;
  if (blocks_from) {
    RADIX_ASSIGN_OR_RETURN(
        w, load_gguf_blocks(platform, shapes, *blocks_from, lo, *g->config_.weight_quant, rows.has_value()));
  } else {
    RADIX_ASSIGN_OR_RETURN(w, load_weights(platform, shapes, store, lo));
    if (g->config_.tensor_parallel > 1)
      RADIX_RETURN_IF_ERROR(keep_tensor_parallel_part(platform, g->config_, distributed::rank(), w));
    if (g->config_.weight_quant)
      RADIX_RETURN_IF_ERROR(quantize_matrices(platform, rows.value_or(*g->config_.weight_quant), w));
  }
  if (rows) g->config_.weight_quant = rows;
  g->weights_ = std::make_shared<const Llama<Buffer>>(std::move(w));
  g->load_ms_ = ms_since(t0);
  RADIX_RETURN_IF_ERROR(g->reset());
  // The decode step (and any prompt lengths asked for), compiled up front.
  std::vector<int64_t> steps = {1};
  steps.insert(steps.end(), options.prompt_lengths.begin(), options.prompt_lengths.end());
  RADIX_RETURN_IF_ERROR(g->compile_steps(steps));
  return g;
}

Status LlamaGenerator::reset() {
  KvCache<Shape> shapes = kv_cache_shapes(config_);
  cache_buffers_ = map_leaves<Buffer>(shapes, [&](const std::string&, const Shape& s) {
    std::vector<std::byte> zeros(s.byte_size());
    auto b = platform_.bytes(s, zeros);
    return b.ok() ? std::move(b).value() : Buffer();
  });
  for (const Buffer& b : cache_buffers_.k)
    if (!b.valid()) return runtime_error("llama: cannot allocate the KV cache");
  pos_ = 0;
  return Status();
}

Status LlamaGenerator::record(const CompileStats& stats, double ms) {
  compile_ms_ += ms;
  if (cache_ == CompileStats::Cache::kOff || stats.cache != CompileStats::Cache::kHit) cache_ = stats.cache;
  return Status();
}

Result<std::unique_ptr<LlamaGenerator::Prepared>> LlamaGenerator::build_step(int64_t s) const {
  Llama<Tensor> model = map_leaves<Tensor>(*weights_, [](const std::string&, const Buffer& b) {
    return Tensor::placeholder(b.shape());
  });
  model.config = config_;
  KvCache<Tensor> cache = map_leaves<Tensor>(kv_cache_shapes(config_), [](const std::string&, const Shape& sh) {
    return Tensor::placeholder(sh);
  });
  CompileFnOptions o;
  o.trace.name = options_.name + (s == 1 ? "_decode" : "_prefill" + std::to_string(s));
  o.compile = options_.compile;
  if (config_.tensor_parallel > 1) {  // one device's program, all-reducing explicitly (llama.h)
    o.trace.mesh = Mesh({{kTensorParallelAxis, config_.tensor_parallel}});
    o.trace.partitioning = TraceOptions::Partitioning::kManual;
  }
  RADIX_ASSIGN_OR_RETURN(Forward exe, compile_model(platform_, o, model, &Llama<Tensor>::forward,
                                                    Shape(DType::kI32, {1, s}), cache, Shape(DType::kI32)));
  RADIX_ASSIGN_OR_RETURN(Prepared p, exe.prepare_shared(weights_));
  return std::make_unique<Prepared>(std::move(p));
}

Result<const LlamaGenerator::Prepared*> LlamaGenerator::step_for(int64_t s) {
  if (auto it = steps_.find(s); it != steps_.end()) return it->second.get();
  RADIX_RETURN_IF_ERROR(compile_steps(std::span<const int64_t>(&s, 1)));
  return steps_.at(s).get();
}

Status LlamaGenerator::compile_steps(std::span<const int64_t> token_counts) {
  std::vector<int64_t> todo;
  for (int64_t s : token_counts) {
    if (s < 1 || s > config_.seq_len)
      return invalid_argument("llama: cannot compile a " + std::to_string(s) + "-token step: the context holds 1 to " +
                              std::to_string(config_.seq_len) + " tokens");
    if (!steps_.count(s) && std::find(todo.begin(), todo.end(), s) == todo.end()) todo.push_back(s);
  }
  if (todo.empty()) return Status();
  auto t0 = Clock::now();
  // One batch of up to `width` steps at a time: the calling thread compiles
  // the batch's first step, a new thread each of the others.
  std::vector<Result<std::unique_ptr<Prepared>>> built;
  for (size_t i = 0; i < todo.size(); ++i) built.emplace_back(runtime_error("llama: step not compiled"));
  const size_t width = std::max<size_t>(1, std::thread::hardware_concurrency());
  for (size_t first = 0; first < todo.size(); first += width) {
    std::vector<std::thread> threads;
    for (size_t i = first + 1; i < std::min(todo.size(), first + width); ++i)
      threads.emplace_back([&, i] { built[i] = build_step(todo[i]); });
    built[first] = build_step(todo[first]);
    for (std::thread& t : threads) t.join();
  }
  Status first_error;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!built[i].ok()) {
      if (first_error.ok()) first_error = built[i].status();
      continue;
    }
    std::unique_ptr<Prepared> p = std::move(built[i]).value();
    RADIX_RETURN_IF_ERROR(record(p->executable().stats(), 0));
    steps_.emplace(todo[i], std::move(p));
  }
  compile_ms_ += ms_since(t0);  // wall time: the steps compiled side by side
  return first_error;
}

Result<const LlamaGenerator::Sampler*> LlamaGenerator::sampler_for(const GenerateOptions& o) {
  auto key = std::make_tuple(o.temperature, o.top_k, o.top_p);
  if (auto it = samplers_.find(key); it != samplers_.end()) return it->second.get();
  if (o.temperature < 0 || o.top_k < 0 || !(o.top_p > 0 && o.top_p <= 1))
    return invalid_argument("generate: temperature must be >= 0, top_k >= 0 and top_p in (0, 1]");
  auto t0 = Clock::now();
  nn::SamplerOptions so;
  so.temperature = o.temperature;
  so.top_k = o.top_k;
  so.top_p = o.top_p;
  CompileFnOptions co;
  co.trace.name = options_.name + "_sampler";
  co.compile = options_.compile;
  auto fn = [so](Tensor state, Tensor logits) -> RandomResult<Tensor> { return nn::sample(state, logits, so); };
  RADIX_ASSIGN_OR_RETURN(Sampler s, compile_fn(platform_, co, fn, rng_state_shape(),
                                               Shape(DType::kF32, {1, config_.vocab_size})));
  RADIX_RETURN_IF_ERROR(record(s.executable().stats(), ms_since(t0)));
  auto [it, inserted] = samplers_.emplace(key, std::make_unique<Sampler>(std::move(s)));
  return it->second.get();
}

Result<Buffer> LlamaGenerator::run_step(std::span<const int32_t> tokens) {
  const int64_t s = static_cast<int64_t>(tokens.size());
  if (s < 1 || pos_ + s > config_.seq_len)
    return invalid_argument("llama: " + std::to_string(s) + " tokens at position " + std::to_string(pos_) +
                            " do not fit the " + std::to_string(config_.seq_len) + "-position context");
  for (int32_t t : tokens)
    if (t < 0 || t >= config_.vocab_size)
      return invalid_argument("llama: token " + std::to_string(t) + " is outside the vocabulary [0, " +
                              std::to_string(config_.vocab_size) + ")");
  RADIX_ASSIGN_OR_RETURN(const Prepared* step, step_for(s));
  RADIX_ASSIGN_OR_RETURN(Buffer tok, platform_.buffer(Shape(DType::kI32, {1, s}), tokens));
  RADIX_ASSIGN_OR_RETURN(Buffer pos, platform_.scalar(static_cast<int32_t>(pos_)));
  RADIX_ASSIGN_OR_RETURN(LlamaStep<Buffer> out, step->call(tok, std::move(cache_buffers_), pos));
  cache_buffers_ = std::move(out.cache);  // the same memory, updated in place
  pos_ += s;
  return std::move(out.logits);
}

Result<std::vector<float>> LlamaGenerator::forward(std::span<const int32_t> tokens) {
  RADIX_ASSIGN_OR_RETURN(Buffer logits, run_step(tokens));
  return logits.to_host<float>();
}

Result<GenerateStats> LlamaGenerator::generate(std::span<const int32_t> prompt, const GenerateOptions& o,
                                               const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) return invalid_argument("generate: the prompt needs at least one token (e.g. BOS)");
  GenerateStats st;
  const double compiled_before = compile_ms_;
  RADIX_ASSIGN_OR_RETURN(const Sampler* sampler, sampler_for(o));
  const int64_t steps = std::min<int64_t>(o.steps, config_.seq_len);
  RADIX_RETURN_IF_ERROR(reset());
  std::array<uint32_t, 4> seed = rng_state_from_seed(o.seed);
  RADIX_ASSIGN_OR_RETURN(Buffer state, platform_.buffer(rng_state_shape(), std::span<const uint32_t>(seed)));

  // Prefill: the whole prompt in one call (its executable compiled first,
  // outside the timing).
  const int64_t n_prompt = prefill_tokens(static_cast<int64_t>(prompt.size()), o, config_.seq_len);
  RADIX_RETURN_IF_ERROR(step_for(n_prompt).status());
  // Tensor-parallel: the ranks compile at their own pace; the first
  // all-reduce would otherwise time the slowest compile as prefill.
  if (config_.tensor_parallel > 1) RADIX_RETURN_IF_ERROR(distributed::barrier());
  auto t0 = Clock::now();
  RADIX_ASSIGN_OR_RETURN(Buffer logits, run_step(prompt.first(static_cast<size_t>(n_prompt))));
  st.prefill_ms = ms_since(t0);
  st.prefill_tokens = n_prompt;

  t0 = Clock::now();
  // As llama2.c: a token is sampled after every forward, the last one too,
  // so a run fills `steps` positions and prints steps - prompt + 1 tokens.
  for (;;) {
    RADIX_ASSIGN_OR_RETURN(RandomResult<Buffer> draw, sampler->call(std::move(state), logits));
    state = std::move(draw.state);
    RADIX_ASSIGN_OR_RETURN(std::vector<int32_t> tok, draw.samples.to_host<int32_t>());
    if (tok[0] == o.stop_token || !on_token(tok[0])) break;
    if (pos_ >= steps) break;
    ++st.decode_tokens;  // tokens run through the decode step
    RADIX_ASSIGN_OR_RETURN(logits, run_step(std::span<const int32_t>(tok.data(), 1)));
  }
  st.decode_ms = ms_since(t0);
  st.compile_ms = compile_ms_ - compiled_before;
  st.cache = cache_;
  return st;
}

}  // namespace radix::models
