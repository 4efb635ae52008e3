// LlamaGenerator: a Llama loaded from a weight store and compiled into a
// prefill executable (the prompt, all at once) and a one-token decode
// executable that share the weights and a donated KV cache, plus a compiled
// sampler. generate() streams tokens to a callback and reports timings.
//
//   auto store = io::open_weights("stories260K.bin");
//   auto gen = LlamaGenerator::load(Platform::cpu(), **store);
//   GenerateOptions o;  o.temperature = 0;
//   gen->generate(tokens_of_prompt, o, [](int32_t token) { ...; return true; });
//
// Thread-safety: one generate() at a time per generator (the KV cache is
// its state). Ownership: the generator owns its buffers; the store is only
// read while loading.
#pragma once

#include <optional>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "radix/api/compile.h"
#include "radix/api/load.h"
#include "radix/models/llama/llama.h"
#include "radix/trace/ops_random.h"

namespace radix::models {

struct GenerateOptions {
  // Positions to fill, prompt included (llama2.c's -n); capped at seq_len.
  int64_t steps = 256;
  double temperature = 1.0;  // 0: greedy (deterministic)
  int64_t top_k = 0;         // 0: off
  double top_p = 0.9;        // 1: off
  uint64_t seed = 0;
  // Stop at this token (the tokenizer's EOS / BOS); -1: never.
  int32_t stop_token = -1;
};

// How many of a prompt's tokens generate() runs in its one prefill call:
// the prompt, cut to the `steps` positions it fills and to the context
// (seq_len). The prefill step to compile up front for that prompt.
int64_t prefill_tokens(int64_t prompt_size, const GenerateOptions& options, int64_t seq_len);

struct GenerateStats {
  int64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_ms = 0, decode_ms = 0, compile_ms = 0;
  CompileStats::Cache cache = CompileStats::Cache::kOff;  // of the executables compiled for this run
  double prefill_tokens_per_s() const { return prefill_ms > 0 ? prefill_tokens * 1000.0 / prefill_ms : 0; }
  double decode_tokens_per_s() const { return decode_ms > 0 ? decode_tokens * 1000.0 / decode_ms : 0; }
};

class LlamaGenerator {
 public:
  struct Options {
    LoadOptions load;
    CompileOptions compile;
    // The matrices' dtype in memory (f32, bf16 or f16; activations stay
    // f32), converted on load if the store differs. Unset: a store holding
    // 16-bit float matrices keeps them 16-bit, anything else is f32.
    std::optional<DType> weight_dtype;
    // Set: the projections and the classifier are quantized on load (from
    // the store's values, read as f32) into this format and kept quantized
    // (LlamaConfig::weight_quant); embeddings follow weight_dtype. Unset
    // (and weight_dtype unset): a GGUF file whose projections are Q8_0 / Q4_0
    // keeps them in that format (requantizing its f32 values gives back the
    // file's blocks), when every matrix's width is a multiple of 32.
    std::optional<QuantFormat> weight_quant;
    // With quantized matrices: the decode steps' activations as int8 blocks
    // (default, llama.cpp's way) or f32 (LlamaConfig::quantized_activations).
    QuantizedActivations quantized_activations = QuantizedActivations::kInt8Blocks;
    // Q4_0 matrices (quantized on load, or a GGUF file's blocks) are held as
    // Q4_0x16, 16 rows interleaved (trace/ops_quant.h), where the CPU's
    // row-group kernels read them so (x86 with AVX2; every matrix a
    // multiple of 16 rows; one device): the same numbers, the decode
    // products at 1.5-3x the weights per second; Q8_0 matrices as Q8_0x16
    // likewise (stories15M Q8_0 decode ~1.5x, stories110M's 1.0-1.3x on a
    // Zen 5 core; with f32 activations 1.2-1.5x). false keeps the file's
    // layout.
    bool interleave_rows = true;
    // The KV cache's dtype (LlamaConfig::kv_dtype): bf16 or f16 halve the
    // bytes each step reads from the cache, keys and values rounded as they
    // are written. Unset: f16 when the matrices are held quantized and the
    // decode steps round their activations to int8 blocks (kInt8Blocks:
    // llama.cpp's way, whose default cache is f16 too; the cache's rounding,
    // 2^-11 relative, is far below the activations'), otherwise the
    // activations' dtype (f32). Set f32 to keep an f32 cache there.
    std::optional<DType> kv_dtype;
    std::string name = "llama";  // module names: <name>_prefill<s>, <name>_decode
    // Above 1: tensor-parallel over this many MPI processes (one device
    // each; the job must have exactly that many, see runtime/distributed.h).
    // Each process loads the whole store and keeps its part of the heads and
    // the hidden axis (LlamaConfig::tensor_parallel); every process computes
    // the same logits, samples the same tokens and returns the same text.
    int64_t tensor_parallel = 1;
    // Prompt lengths whose prefill steps load() compiles together with the
    // decode step, concurrently (see compile_steps): a prompt of such a
    // length then starts without a compile. Each in [1, seq_len].
    std::vector<int64_t> prompt_lengths;
  };

  // Reads the configuration and weights from `store` and compiles the
  // decode step and the sampler.
  static Result<std::unique_ptr<LlamaGenerator>> load(const Platform& platform, const io::WeightStore& store,
                                                      const Options& options);
  static Result<std::unique_ptr<LlamaGenerator>> load(const Platform& platform, const io::WeightStore& store) {
    return load(platform, store, Options{});
  }

  const LlamaConfig& config() const { return config_; }
  double load_ms() const { return load_ms_; }
  double compile_ms() const { return compile_ms_; }  // everything compiled so far
  CompileStats::Cache cache() const { return cache_; }  // the decode step's executable cache result

  // Compiles the s-token step now (generate() compiles what it needs on
  // first use; this moves that time before output starts). s in [1, seq_len].
  Status compile_step(int64_t s) { return compile_steps(std::span<const int64_t>(&s, 1)); }
  // Compiles the steps for these token counts that are not compiled yet,
  // concurrently: one thread per step, as many at once as the machine has
  // cores (each compile is single-threaded; ZML compiles prefill and decode
  // the same way). compile_ms() grows by the wall time. The first error is
  // returned; the steps that compiled are kept.
  Status compile_steps(std::span<const int64_t> token_counts);
  // Clears the KV cache (a new sequence starts at position 0).
  Status reset();
  // Runs `tokens` (1 <= size, pos + size <= seq_len) at positions
  // [pos, pos + size): one prefill call (or the decode step for one token),
  // returns the last token's logits [vocab] and advances the position.
  Result<std::vector<float>> forward(std::span<const int32_t> tokens);
  int64_t position() const { return pos_; }

  // Feeds `prompt` (at least one token, e.g. BOS) then samples until
  // options.steps positions are filled, `stop_token` comes, or on_token
  // returns false. on_token gets every sampled token as it is produced.
  Result<GenerateStats> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                 const std::function<bool(int32_t)>& on_token);

 private:
  using Forward = Exe<Llama<Tensor>, LlamaStep<Tensor>(Tensor, KvCache<Tensor>, Tensor)>;
  using Prepared = Forward::Prepared;
  LlamaGenerator() = default;
  using Sampler = ExeWithWeights<NoModel, RandomResult<Tensor>(Tensor, Tensor)>;
  Result<const Prepared*> step_for(int64_t s);  // compiles the s-token step on first use
  Result<std::unique_ptr<Prepared>> build_step(int64_t s) const;  // traces + compiles; touches no member state
  Result<Buffer> run_step(std::span<const int32_t> tokens);  // logits [1, vocab]
  Result<const Sampler*> sampler_for(const GenerateOptions& o);
  Status record(const CompileStats& stats, double ms);

  Platform platform_ = Platform::cpu();
  Options options_;
  LlamaConfig config_;
  std::shared_ptr<const Llama<Buffer>> weights_;
  std::map<int64_t, std::unique_ptr<Prepared>> steps_;  // by token count
  std::map<std::tuple<double, int64_t, double>, std::unique_ptr<Sampler>> samplers_;
  KvCache<Buffer> cache_buffers_;
  int64_t pos_ = 0;
  double load_ms_ = 0, compile_ms_ = 0;
  CompileStats::Cache cache_ = CompileStats::Cache::kOff;
};

}  // namespace radix::models
