// radix generate / radix convert.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "radix/io/gguf.h"
#include "radix/io/safetensors.h"
#include "radix/models/llama/generator.h"
#include "radix/runtime/distributed.h"
#include "radix/radix.h"
#include "radix/tokenizer/gguf_vocab.h"
#include "radix/tokenizer/tokenizer.h"
#include "radix/tokenizer/utf8_stream.h"
#include "tools/commands.h"

namespace radix::cli {

const char* kGenerateUsage =
    "usage: radix generate --model PATH [options]\n"
    "\n"
    "Runs a Llama-architecture model and streams the text it writes, then prints one line of\n"
    "timings: load, compile (and executable-cache result), prefill and decode tokens/s.\n"
    "\n"
    "  --model PATH        weights: a llama2.c checkpoint (.bin), a safetensors file converted\n"
    "                      from one, or a GGUF file (llama; F32/F16/BF16/Q8_0/Q4_0); the format\n"
    "                      is picked from the file\n"
    "  --tokenizer PATH    llama2.c tokenizer (.bin) or SentencePiece model (.model); default:\n"
    "                      a GGUF file's own vocabulary, else tok512.bin, tokenizer.bin or\n"
    "                      tokenizer.model next to the model\n"
    "  --prompt TEXT       text to continue (default: none, start from BOS)\n"
    "  --steps N           positions to fill, prompt included, as llama2.c's -n (default 256)\n"
    "  --temperature T     0 = greedy and deterministic (default 1.0)\n"
    "  --top-p P           nucleus sampling, 1 = off (default 0.9)\n"
    "  --top-k K           keep the K most likely tokens, 0 = off (default 0)\n"
    "  --seed S            sampling seed (default: the current time)\n"
    "  --cache-dir DIR     on-disk executable cache (a later run loads instead of compiling)\n"
    "  --weights DTYPE     the matrices in memory: f32, bf16 or f16, converted on load (default:\n"
    "                      as stored if bf16 / f16, else f32); bf16 halves the bytes a decode\n"
    "                      step reads; or int8, q8_0, q4_0: quantized on load and kept\n"
    "                      quantized (int8 per channel; GGUF's block formats, which need dim\n"
    "                      and hidden_dim multiples of 32)\n"
    "  --activations A     with quantized matrices: int8 (default: decode steps round their\n"
    "                      activations to int8 blocks of 32 and run integer dot products, as\n"
    "                      llama.cpp does) or f32 (exact products with the quantized weights)\n"
    "  --kv-cache DTYPE    the KV cache: f32, bf16 or f16 (half the bytes each step reads from\n"
    "                      it; keys and values rounded as written). Default: f16 with quantized\n"
    "                      matrices and int8 activations (llama.cpp's defaults), else f32\n"
    "  --threads N         threads per executable (default: every core)\n"
    "  --sharded           tensor-parallel over every process of an MPI job, one device each\n"
    "                      (mpirun -np 2 radix generate --sharded ...): attention heads and the\n"
    "                      feed-forward's hidden axis split, all-reduces after wo and w2; rank 0\n"
    "                      prints the text, the same as one process's\n"
    "  --platform NAME     cpu (default) or cuda (an NVIDIA GPU; without one it exits with\n"
    "                      'no CUDA device: ...')\n"
    "  --verbose           per-stage compile progress, weight loading\n";

const char* kConvertUsage =
    "usage: radix convert IN OUT.safetensors\n"
    "\n"
    "Reads any supported weight file (llama2.c, safetensors, GGUF) and writes its tensors and\n"
    "metadata as one safetensors file.\n";

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// f32, bf16 or f16 by name (--weights, --kv-cache); nullopt otherwise.
std::optional<DType> float_dtype_named(const std::string& d) {
  if (d == "f32") return DType::kF32;
  if (d == "bf16") return DType::kBF16;
  if (d == "f16") return DType::kF16;
  return std::nullopt;
}

struct GenerateArgs {
  std::string model, tokenizer, prompt;
  models::GenerateOptions gen;
  bool seed_given = false;
  std::string cache_dir;
  std::optional<DType> weights;
  std::optional<QuantFormat> quant;
  QuantizedActivations activations = QuantizedActivations::kInt8Blocks;
  std::optional<DType> kv_cache;
  int threads = 0;
  bool sharded = false;
  bool verbose = false;
  std::string platform = "cpu";
};

bool parse(int argc, char** argv, GenerateArgs* a, std::string* err) {
  for (int i = 0; i < argc; ++i) {
    std::string f = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto need = [&](const char* what) {
      if (!v) *err = f + " needs " + what;
      return v != nullptr;
    };
    auto number = [&](double lo, double hi, double* out) {
      if (!need("a number")) return false;
      char* end = nullptr;
      double x = std::strtod(v, &end);
      if (*v == '\0' || *end != '\0' || !(x >= lo && x <= hi)) {
        *err = f + " needs a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'";
        return false;
      }
      *out = x;
      ++i;
      return true;
    };
    double x = 0;
    if (f == "--model") { if (!need("a path")) return false; a->model = v; ++i; }
    else if (f == "--tokenizer") { if (!need("a path")) return false; a->tokenizer = v; ++i; }
    else if (f == "--prompt") { if (!need("a text")) return false; a->prompt = v; ++i; }
    else if (f == "--steps") { if (!number(1, 1e9, &x)) return false; a->gen.steps = static_cast<int64_t>(x); }
    else if (f == "--temperature") { if (!number(0, 1e6, &x)) return false; a->gen.temperature = x; }
    else if (f == "--top-p") { if (!number(1e-9, 1, &x)) return false; a->gen.top_p = x; }
    else if (f == "--top-k") { if (!number(0, 1e9, &x)) return false; a->gen.top_k = static_cast<int64_t>(x); }
    else if (f == "--seed") { if (!number(0, 1.8e19, &x)) return false; a->gen.seed = static_cast<uint64_t>(x); a->seed_given = true; }
    else if (f == "--cache-dir") { if (!need("a folder")) return false; a->cache_dir = v; ++i; }
    else if (f == "--weights") {
      if (!need("f32, bf16, f16, int8, q8_0 or q4_0")) return false;
      const std::string d = v;
      if (auto t = float_dtype_named(d)) a->weights = t;
      else if (auto q = parse_quant_format(d)) a->quant = q;
      else { *err = "--weights needs f32, bf16, f16, int8, q8_0 or q4_0, got '" + d + "'"; return false; }
      ++i;
    }
    else if (f == "--activations") {
      if (!need("int8 or f32")) return false;
      const std::string d = v;
      if (d == "int8") a->activations = QuantizedActivations::kInt8Blocks;
      else if (d == "f32") a->activations = QuantizedActivations::kF32;
      else { *err = "--activations needs int8 or f32, got '" + d + "'"; return false; }
      ++i;
    }
    else if (f == "--kv-cache") {
      if (!need("f32, bf16 or f16")) return false;
      const std::string d = v;
      if (auto t = float_dtype_named(d)) a->kv_cache = t;
      else { *err = "--kv-cache needs f32, bf16 or f16, got '" + d + "'"; return false; }
      ++i;
    }
    else if (f == "--threads") { if (!number(1, 1024, &x)) return false; a->threads = static_cast<int>(x); }
    else if (f == "--verbose") a->verbose = true;
    else if (f == "--platform") { if (!need("a name (cpu or cuda)")) return false; a->platform = v; ++i; }
    else if (f == "--sharded") a->sharded = true;
    else { *err = "unknown option '" + f + "'"; return false; }
  }
  if (a->model.empty()) { *err = "--model PATH is required"; return false; }
  return true;
}

std::string find_tokenizer(const std::string& model) {
  std::filesystem::path dir = std::filesystem::path(model).parent_path();
  for (const char* name : {"tok512.bin", "tokenizer.bin", "tokenizer.model"})
    if (std::filesystem::exists(dir / name)) return (dir / name).string();
  return "";
}

Result<std::unique_ptr<tok::Tokenizer>> open_tokenizer(const std::string& path, int64_t vocab) {
  if (path.size() > 6 && path.substr(path.size() - 6) == ".model") return tok::load_sentencepiece(path);
  return tok::load_llama2c_tokenizer(path, static_cast<int32_t>(vocab));
}

int fail(const char* cmd, const Status& s) {
  std::fprintf(stderr, "radix %s: %s\n", cmd, s.to_string().c_str());
  return 1;
}

}  // namespace

int run_generate(int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return std::fputs(kGenerateUsage, stdout), 0;
  GenerateArgs a;
  std::string err;
  if (!parse(argc, argv, &a, &err)) {
    std::fprintf(stderr, "radix generate: %s\n(see 'radix generate --help')\n", err.c_str());
    return 2;
  }
  if (!a.seed_given) a.gen.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());

  // Sharded: every rank runs the same generation; rank 0 alone prints the
  // text and the timings (every rank still reports its errors).
  const bool quiet = a.sharded && distributed::rank() != 0;
  if (quiet && !std::freopen("/dev/null", "w", stdout)) return 1;
  if (a.sharded && a.platform != "cpu") {
    std::fprintf(stderr, "radix generate: --sharded runs on the cpu platform only\n");
    return 2;
  }
  auto platform = Platform::get(a.platform);
  if (!platform.ok()) return fail("generate", platform.status());
  auto t0 = Clock::now();
  auto store = io::open_weights(a.model);
  if (!store.ok()) return fail("generate", store.status());
  models::LlamaGenerator::Options opts;
  if (a.sharded) opts.tensor_parallel = distributed::size();
  opts.load.progress = a.verbose;
  opts.compile.cache_dir = a.cache_dir;
  opts.compile.diagnostics.verbose = a.verbose;
  opts.compile.codegen.cpu.threads = a.threads;
  opts.weight_dtype = a.weights;
  opts.weight_quant = a.quant;
  opts.quantized_activations = a.activations;
  opts.kv_dtype = a.kv_cache;
  // The tokenizer first: the prompt's length picks the prefill step, which
  // then compiles together with the decode step.
  auto config = models::llama_config_from(**store);
  if (!config.ok()) return fail("generate", config.status());
  std::unique_ptr<tok::Tokenizer> embedded;  // a GGUF file carries its vocabulary
  if (a.tokenizer.empty() && (*store)->format() == "gguf") {
    auto gguf = io::open_gguf(a.model);
    if (!gguf.ok()) return fail("generate", gguf.status());
    auto t = tok::gguf_tokenizer(**gguf);
    if (!t.ok()) return fail("generate", t.status());
    embedded = std::move(t).value();
  }
  if (a.tokenizer.empty() && !embedded) a.tokenizer = find_tokenizer(a.model);
  if (a.tokenizer.empty() && !embedded)
    return fail("generate", invalid_argument("no tokenizer next to " + a.model + " (tok512.bin, tokenizer.bin or "
                                             "tokenizer.model): give --tokenizer PATH"));
  Result<std::unique_ptr<tok::Tokenizer>> tokenizer =
      embedded ? Result<std::unique_ptr<tok::Tokenizer>>(std::move(embedded))
               : open_tokenizer(a.tokenizer, config->vocab_size);
  if (!tokenizer.ok()) return fail("generate", tokenizer.status());
  const tok::Tokenizer& tk = **tokenizer;
  std::vector<int32_t> prompt = tk.encode(a.prompt, /*bos=*/true, /*eos=*/false);
  opts.prompt_lengths = {models::prefill_tokens(static_cast<int64_t>(prompt.size()), a.gen, config->seq_len)};
  auto gen = models::LlamaGenerator::load(*platform, **store, opts);
  if (!gen.ok()) return fail("generate", gen.status());
  const double load_ms = ms_since(t0) - (*gen)->compile_ms();  // weights and tokenizer

  // The prompt is printed as it was given; then each sampled token's piece,
  // as valid UTF-8, as soon as it completes a character.
  std::fputs(a.prompt.c_str(), stdout);
  std::fflush(stdout);
  tok::Utf8Stream utf8;
  int32_t prev = prompt.back();
  a.gen.stop_token = tk.bos();  // llama2.c: BOS delimits sequences
  auto run = (*gen)->generate(prompt, a.gen, [&](int32_t t) {
    std::string text = utf8.push(tk.piece(prev, t));
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    prev = t;
    return true;
  });
  std::fputs(utf8.finish().c_str(), stdout);
  std::printf("\n");
  std::fflush(stdout);  // the text, then the timings on stderr
  if (!run.ok()) return fail("generate", run.status());
  const models::GenerateStats& st = *run;
  const double compile_ms = (*gen)->compile_ms();
  if (!quiet)
    std::fprintf(stderr, "load %.0f ms, compile %.0f ms (cache %s), prefill %lld tokens %.0f tok/s, decode %lld tokens %.0f tok/s\n",
               load_ms, compile_ms, cache_result_name((*gen)->cache()), (long long)st.prefill_tokens,
               st.prefill_tokens_per_s(), (long long)st.decode_tokens, st.decode_tokens_per_s());
  return 0;
}

int run_convert(int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return std::fputs(kConvertUsage, stdout), 0;
  if (argc != 2) {
    std::fprintf(stderr, "radix convert: needs IN and OUT.safetensors\n(see 'radix convert --help')\n");
    return 2;
  }
  auto t0 = Clock::now();
  auto store = io::open_weights(argv[0]);
  if (!store.ok()) return fail("convert", store.status());
  Status st = io::write_safetensors(argv[1], **store);
  if (!st.ok()) return fail("convert", st);
  std::printf("wrote %zu tensors (%.2f MiB) from %s (%s) to %s in %.0f ms\n", (*store)->tensors().size(),
              double((*store)->total_bytes()) / (1 << 20), argv[0], (*store)->format().c_str(), argv[1], ms_since(t0));
  return 0;
}

}  // namespace radix::cli
