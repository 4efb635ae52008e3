// radix bench: the LLM rows. Llama models of llama2.c's stories15M and
// stories110M shapes with seeded random f32 weights (no download needed; the
// speed of a model does not depend on its weights), run through
// LlamaGenerator as `radix generate` runs them:
//
//  * prefill of N tokens (tok/s: one forward of N tokens after a reset),
//    peer "sgemm-rate": the tok/s the model would reach if every matmul ran
//    at OpenBLAS sgemm's rate on a [N, dim] . [dim, hidden] product;
//  * decode of M tokens (tok/s: M one-token forwards after the first),
//    peer "roofline": the tok/s of reading every weight once per token at
//    the read bandwidth measured on a buffer of the same size.
//
// Each (model, thread count) is loaded twice with an executable cache in a
// temp folder: the first compile is cold (a miss, stored), the second a
// hit; both times are printed. Prefill and decode are checked against each
// other first (the last logits of N prefilled tokens vs N decode steps).
//
// Peer "llama.cpp" (when llama-bench is there: --llama-bench, or where
// scripts/build-llama-cpp.sh builds it): llama.cpp's llama-bench run on a
// GGUF of the same weights (F32 for the f32 rows; BF16 matrices, F32 norms
// for the bf16 ones), written to a temp folder and read back by Radix's own
// GGUF loader first: `-p N -n M -t t -r 1 -o jsonl`, one process in each of
// the case's rounds (interleaved with Radix and the other peers like them),
// the median of those runs. llama-bench reports times only: its output is not
// checked, but the parameter count it loaded must be the model's.
//
// --write-models DIR writes the same models as safetensors (Radix's names,
// llama2c.* metadata), GGUF (llama.cpp's names, F32 and BF16, a placeholder
// vocabulary) and llama2.c .bin files, so other engines run the same weights.
#include <cblas.h>
#include <stdlib.h>  // mkdtemp
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "radix/core/half.h"
#include "radix/io/gguf.h"
#include "radix/io/quantize.h"
#include "radix/io/safetensors.h"
#include "radix/io/weight_store.h"
#include "radix/models/llama/generator.h"
#include "radix/radix.h"
#include "radix/io/llama2c.h"
#include "tools/bench_command.h"

namespace radix::cli::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
Status io_error(std::string msg) { return Status(ErrorCode::kIoError, std::move(msg)); }

// ------------------------------------------------------------- the models

struct LlmModel {
  const char* name;
  int32_t dim, hidden, layers, heads, kv_heads, vocab, seq_len;
  int64_t kv_dim() const { return int64_t{dim} / heads * kv_heads; }
  // Parameters of the layers' seven matrices (what a prefill token multiplies).
  double layer_matmul_params() const {
    return static_cast<double>(layers) * (2.0 * dim * dim + 2.0 * static_cast<double>(kv_dim()) * dim + 3.0 * dim * hidden);
  }
  double classifier_params() const { return static_cast<double>(vocab) * dim; }
};

// llama2.c's stories checkpoints (its model card): tied classifier, vocab 32000.
constexpr LlmModel kModels[] = {
    {"stories15M", 288, 768, 6, 6, 6, 32000, 256},
    {"stories110M", 768, 2048, 12, 12, 12, 32000, 1024},
};
constexpr uint64_t kWeightSeed = 0x5EED'2025;

struct LlmSizes {
  int64_t prefill, decode;
};
LlmSizes llm_sizes(const BenchOptions& o) { return o.quick ? LlmSizes{32, 16} : LlmSizes{128, 64}; }

std::vector<const LlmModel*> llm_models(const BenchOptions& o) {
  std::vector<const LlmModel*> ms = {&kModels[0]};
  if (!o.quick) ms.push_back(&kModels[1]);
  return ms;
}

// How each model's matrices are held in memory: f32; bf16 (activations f32:
// half the bytes a decode step reads); or GGUF's Q8_0 / Q4_0 blocks
// (LlamaGenerator::Options::weight_quant: quantized on load with llama.cpp's
// rounding, kept packed; decode steps round activations to int8 blocks as
// llama.cpp does). Norms stay f32; the embedding table follows weight_dtype
// (f32 for the Q kinds), the tied classifier is quantized with the matrices.
struct WeightKind {
  DType dtype;
  std::optional<QuantFormat> quant;
  std::string name() const { return quant ? quant_format_name(*quant) : std::string(dtype_name(dtype)); }
  // Bytes of a [n, k] matrix held this way (Q formats: values and scales,
  // core/quant_format.h's shapes).
  double matrix_bytes(int64_t n, int64_t k) const {
    if (!quant) return static_cast<double>(n * k) * static_cast<double>(dtype_size(dtype));
    return static_cast<double>(quantized_values_shape(*quant, n, k).byte_size() +
                               quantized_scales_shape(*quant, n, k).byte_size());
  }
};
const WeightKind kWeightKinds[] = {
    {DType::kF32, std::nullopt}, {DType::kBF16, std::nullopt}, {DType::kF32, QuantFormat::kQ8_0}, {DType::kF32, QuantFormat::kQ4_0}};

std::string prefill_case(const LlmModel& m, const WeightKind& wk, const BenchOptions& o) {
  return "llm " + std::string(m.name) + " " + wk.name() + " prefill " + std::to_string(llm_sizes(o).prefill);
}
std::string decode_case(const LlmModel& m, const WeightKind& wk, const BenchOptions& o) {
  return "llm " + std::string(m.name) + " " + wk.name() + " decode " + std::to_string(llm_sizes(o).decode);
}
bool wants_kind(const LlmModel& m, const WeightKind& wk, const BenchOptions& o) {
  return o.wants(prefill_case(m, wk, o)) || o.wants(decode_case(m, wk, o));
}

// FNV-1a: a tensor's seed from its name, the same in every build.
uint64_t name_seed(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h ^ kWeightSeed;
}

std::string mib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", bytes / 1048576.0);
  return b;
}

// The model as a weight store in memory, named as llama2.c checkpoints are
// (llama.h), with the llama2c.* metadata llama_config_from reads. Matrices
// [out, in] uniform in +-1/sqrt(in) (activations stay O(1) through the
// layers, so logits stay finite), norms 1; "output" views tok_embeddings'
// bytes (tied, as the stories models).
std::unique_ptr<io::BasicWeightStore> random_store(const LlmModel& m) {
  auto store = std::make_unique<io::BasicWeightStore>(std::string("<random ") + m.name + ">", "memory");
  auto add = [&](const std::string& name, std::vector<int64_t> dims) {
    const Shape shape(DType::kF32, dims);
    std::vector<std::byte> data(shape.byte_size());
    float* p = reinterpret_cast<float*>(data.data());
    const size_t n = static_cast<size_t>(shape.count());
    if (dims.size() == 1) {
      std::fill(p, p + n, 1.f);
    } else {
      const float a = 1.f / std::sqrt(static_cast<float>(dims[1]));
      fill_random(p, n, -a, a, name_seed(name));
    }
    if (Status s = store->add_owned(name, shape, std::move(data)); !s.ok())
      throw std::runtime_error("random weights: " + s.to_string());
  };
  const int64_t d = m.dim, h = m.hidden, kv = m.kv_dim();
  add("tok_embeddings", {m.vocab, d});
  for (int i = 0; i < m.layers; ++i) {
    const std::string l = "layers." + std::to_string(i) + ".";
    add(l + "attention_norm", {d});
    add(l + "attention.wq", {d, d});
    add(l + "attention.wk", {kv, d});
    add(l + "attention.wv", {kv, d});
    add(l + "attention.wo", {d, d});
    add(l + "ffn_norm", {d});
    add(l + "feed_forward.w1", {h, d});
    add(l + "feed_forward.w2", {d, h});
    add(l + "feed_forward.w3", {h, d});
  }
  add("norm", {d});
  auto emb = store->bytes("tok_embeddings");
  if (Status s = store->add_view("output", store->find("tok_embeddings")->shape, *emb); !s.ok())
    throw std::runtime_error("random weights: " + s.to_string());
  auto& meta = store->mutable_metadata();
  io::add_llama2c_metadata({m.dim, m.hidden, m.layers, m.heads, m.kv_heads, m.vocab, m.seq_len, /*shared_classifier=*/true},
                           meta);
  meta["radix.weights"] = "random (radix bench): uniform +-1/sqrt(fan_in) from FNV-1a(name) ^ " +
                          std::to_string(kWeightSeed) + ", norms 1";
  return store;
}

// The f32 store with every matrix converted by `convert` (its f32 values ->
// the new tensor's shape and bytes) and the norms viewed (the f32 store must
// outlive this one); the tied classifier stays a view of the embedding table.
std::unique_ptr<io::BasicWeightStore> converted_store(
    const io::WeightStore& f32, const std::string& what,
    const std::function<std::pair<Shape, std::vector<std::byte>>(const io::TensorInfo&, std::span<const float>)>&
        convert) {
  auto store = std::make_unique<io::BasicWeightStore>(f32.path() + " (" + what + ")", "memory");
  auto check = [&](const Status& s) {
    if (!s.ok()) throw std::runtime_error(what + " weights: " + s.to_string());
  };
  for (const io::TensorInfo& t : f32.tensors()) {
    if (t.name == "output") continue;  // tied: added below as a view
    const std::span<const std::byte> b = f32.bytes(t.name).value();
    if (t.shape.rank() < 2) {
      check(store->add_view(t.name, t.shape, b));
    } else {
      auto [shape, data] =
          convert(t, std::span<const float>(reinterpret_cast<const float*>(b.data()), static_cast<size_t>(t.shape.count())));
      check(store->add_owned(t.name, shape, std::move(data)));
    }
  }
  if (f32.find("output")) check(store->add_view("output", store->find("tok_embeddings")->shape, *store->bytes("tok_embeddings")));
  store->mutable_metadata() = f32.metadata();
  return store;
}

// The store with every matrix rounded to bf16 (float_to_bf16: to nearest even,
// as LlamaGenerator converts them on load with weight_dtype bf16) and the
// norms kept f32, as llama.cpp's converters keep 1-D tensors: the bf16 GGUF's
// tensors.
std::unique_ptr<io::BasicWeightStore> bf16_store(const io::WeightStore& f32) {
  return converted_store(f32, "bf16", [](const io::TensorInfo& t, std::span<const float> src) {
    const Shape shape(DType::kBF16, t.shape.dims());
    std::vector<std::byte> data(shape.byte_size());
    uint16_t* dst = reinterpret_cast<uint16_t*>(data.data());
    for (size_t i = 0; i < src.size(); ++i) dst[i] = float_to_bf16(src[i]);
    return std::make_pair(shape, std::move(data));
  });
}

// The f32 store with every matrix quantized to `f` and back (io::quantize,
// io::dequantize): what Radix's GGUF loader reads a Q8_0 / Q4_0 GGUF of the
// model back as (it dequantizes on open).
std::unique_ptr<io::BasicWeightStore> dequantized_store(const io::WeightStore& f32, QuantFormat f) {
  return converted_store(f32, quant_format_name(f), [f](const io::TensorInfo& t, std::span<const float> w) {
    Result<io::QuantizedMatrix> q = io::quantize(f, w, t.shape.dim(0), t.shape.dim(1));
    if (!q.ok()) throw std::runtime_error(std::string(quant_format_name(f)) + " weights: " + q.status().to_string());
    const std::vector<float> back = io::dequantize(*q);
    std::vector<std::byte> data(t.shape.byte_size());
    std::memcpy(data.data(), back.data(), data.size());
    return std::make_pair(t.shape, std::move(data));
  });
}

// Parameters in a GGUF of the model (what llama-bench reports as model_n_params):
// every tensor once, the tied classifier not at all.
int64_t gguf_params(const io::WeightStore& s) {
  int64_t n = 0;
  for (const io::TensorInfo& t : s.tensors())
    if (t.name != "output") n += t.shape.count();
  return n;
}

// Bytes of the f32 store `s`'s tensors, but for tensor `skip`, with the
// matrices held as `wk` says and the norms f32. `f32_embeddings`: the
// embedding table stays f32, as LlamaGenerator keeps it with Q weights (the
// tied classifier is then a quantized copy).
double held_bytes(const io::WeightStore& s, const WeightKind& wk, const std::string& skip, bool f32_embeddings = false) {
  double b = 0;
  for (const io::TensorInfo& t : s.tensors()) {
    if (t.name == skip) continue;
    const bool matrix = t.shape.rank() >= 2 && !(f32_embeddings && t.name == "tok_embeddings");
    b += matrix ? wk.matrix_bytes(t.shape.dim(0), t.shape.dim(1)) : static_cast<double>(t.shape.byte_size());
  }
  return b;
}
// Bytes a decode step reads in full: every tensor but the embedding table
// (one row of it is gathered), the tied classifier counted once.
double decode_bytes_per_token(const io::WeightStore& s, const WeightKind& wk) { return held_bytes(s, wk, "tok_embeddings"); }
// Distinct weight bytes, as in a GGUF file (the tied classifier is the embedding table).
double weight_bytes(const io::WeightStore& s, const WeightKind& wk) { return held_bytes(s, wk, "output"); }

// ------------------------------------------------------------- the timing

// A temp folder, removed with everything in it when this goes.
class TempDir {
 public:
  explicit TempDir(const std::string& stem) {
    std::string tmpl = (fs::temp_directory_path() / (stem + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temp folder " + tmpl + ": " + std::strerror(errno));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One contender of a round: `once` runs one unit of work and returns the
// seconds of its timed part (a reset before a prefill is not timed).
struct Timed {
  std::function<double()> once;
  std::function<void()> setup;  // before each loop (e.g. OpenBLAS's thread count)
};

// As measure_interleaved, for contenders whose calls need untimed set-up:
// a calibration call each, then `repetitions` rounds, each running every
// contender's loop (>= min_loop_s of timed work, or one call) once, the start
// rotating. Returns the median seconds per unit of each contender.
std::vector<double> timed_rounds(const std::vector<Timed>& cs, const BenchOptions& o) {
  const size_t n = cs.size();
  std::vector<long> iters(n, 1);
  for (size_t i = 0; i < n; ++i) {
    if (cs[i].setup) cs[i].setup();
    cs[i].once();  // warm-up (pages, OpenBLAS's threads)
    const double per = cs[i].once();
    iters[i] = per >= o.min_loop_s ? 1 : std::min<long>(1'000'000, std::lround(std::ceil(o.min_loop_s / std::max(per, 1e-9))));
  }
  std::vector<std::vector<double>> secs(n);
  for (int r = 0; r < o.repetitions; ++r)
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (static_cast<size_t>(r) + k) % n;
      if (cs[i].setup) cs[i].setup();
      double total = 0;
      for (long it = 0; it < iters[i]; ++it) total += cs[i].once();
      secs[i].push_back(total / static_cast<double>(iters[i]));
    }
  std::vector<double> med(n);
  for (size_t i = 0; i < n; ++i) med[i] = median(secs[i]);
  return med;
}

template <class T>
T must(Result<T> r, const std::string& what) {
  if (!r.ok()) throw std::runtime_error(what + ": " + r.status().to_string());
  return std::move(r).value();
}
void must(const Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(what + ": " + s.to_string());
}

// Tokens of a fake prompt: reproducible, in [3, vocab) (past BOS / EOS).
std::vector<int32_t> fake_tokens(size_t n, int32_t vocab) {
  std::vector<int32_t> t(n);
  uint64_t s = 0x70CE5;
  for (int32_t& x : t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = 3 + static_cast<int32_t>((s >> 33) % static_cast<uint64_t>(vocab - 3));
  }
  return t;
}

// ------------------------------------------------------------- llama.cpp

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The number after "key": in one line of llama-bench's jsonl output (NaN when absent).
double json_number(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t p = line.find(k);
  if (p == std::string::npos) return NAN;
  const char* b = line.c_str() + p + k.size();
  char* end = nullptr;
  const double v = std::strtod(b, &end);
  return end == b ? NAN : v;
}
// The numbers of the array after "key": (empty when absent).
std::vector<double> json_numbers(const std::string& line, const std::string& key) {
  std::vector<double> out;
  const size_t p = line.find("\"" + key + "\":");
  if (p == std::string::npos) return out;
  const size_t open = line.find('[', p);
  if (open == std::string::npos) return out;
  const char* c = line.c_str() + open + 1;
  for (;;) {
    while (*c == ' ' || *c == ',') ++c;
    if (*c == ']' || *c == '\0') break;
    char* end = nullptr;
    const double v = std::strtod(c, &end);
    if (end == c) break;
    out.push_back(v);
    c = end;
  }
  return out;
}

struct LlamaCppFigures {
  double prefill = NAN, decode = NAN;  // tok/s, medians of llama-bench's samples
  std::string command, error;          // error: why there are no figures
};

// Runs `exe -m gguf -p prefill -n decode -t threads -r reps -o jsonl` (0 skips
// a test) and reads the median tok/s of each test; the model llama-bench loaded
// must have `params` parameters. stderr goes to `err_path`, quoted on failure.
LlamaCppFigures run_llama_bench(const std::string& exe, const std::string& gguf, int64_t prefill, int64_t decode,
                                int threads, int reps, int64_t params, const std::string& err_path) {
  LlamaCppFigures f;
  const std::string args = " -m " + shell_quote(gguf) + " -p " + std::to_string(prefill) + " -n " +
                           std::to_string(decode) + " -t " + std::to_string(threads) + " -r " + std::to_string(reps) +
                           " -o jsonl";
  f.command = fs::path(exe).filename().string() + args;
  std::fflush(stdout);
  FILE* p = popen((shell_quote(exe) + args + " 2>" + shell_quote(err_path)).c_str(), "r");
  if (!p) {
    f.error = "cannot start " + exe + ": " + std::strerror(errno);
    return f;
  }
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  size_t lines = 0;
  for (size_t b = 0; b < out.size();) {
    size_t e = out.find('\n', b);
    if (e == std::string::npos) e = out.size();
    const std::string line = out.substr(b, e - b);
    b = e + 1;
    if (line.find("\"samples_ts\"") == std::string::npos) continue;
    ++lines;
    const double got = json_number(line, "model_n_params");
    if (got != static_cast<double>(params)) {
      f.error = "llama-bench loaded a model of " + std::to_string(static_cast<long long>(got)) + " parameters, not " +
                std::to_string(params);
      return f;
    }
    const double ts = median(json_numbers(line, "samples_ts"));
    if (json_number(line, "n_prompt") > 0 && json_number(line, "n_gen") == 0) f.prefill = ts;
    else if (json_number(line, "n_gen") > 0 && json_number(line, "n_prompt") == 0) f.decode = ts;
  }
  if (status != 0 || lines == 0) {
    std::ifstream err(err_path);
    std::string last, l;
    while (std::getline(err, l))
      if (!l.empty()) last = l;
    f.error = "llama-bench " +
              (status == 0 ? std::string("printed no results")
               : WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                   : "was killed by signal " + std::to_string(WTERMSIG(status))) +
              (last.empty() ? "" : ": " + last) + " (" + f.command + ")";
    f.prefill = f.decode = NAN;
  }
  return f;
}

struct LlmRows {
  std::vector<BenchRow> prefill, decode;
};

// Loads, checks and times one model at thread count t; then llama.cpp's
// llama-bench on `gguf` (the same weights in this dtype) when it is not empty.
void llm_case(const LlmModel& m, const io::WeightStore& store, const WeightKind& wk, int t, const BenchOptions& o,
              const std::string& gguf, BenchTable& table, LlmRows& rows) {
  const LlmSizes sz = llm_sizes(o);
  const std::string pname = prefill_case(m, wk, o), dname = decode_case(m, wk, o);
  const bool want_prefill = o.wants(pname), want_decode = o.wants(dname);
  if (!want_prefill && !want_decode) return;
  const std::string wname = wk.name();
  const std::string tag = "llm " + std::string(m.name) + " " + wname + " t=" + std::to_string(t);
  static const Platform cpu = Platform::cpu();

  // Cold compile (a cache miss, stored), then a fresh generator from the
  // cache: load + compile of the decode step and the N-token prefill step.
  TempDir cache("radix-bench-llm-cache");
  models::LlamaGenerator::Options go;
  go.name = m.name;
  go.compile.codegen.cpu.threads = t;
  go.compile.codegen.target_cpu = o.target_cpu;
  go.weight_dtype = wk.dtype;
  go.weight_quant = wk.quant;
  go.compile.cache_dir = cache.path();
  go.prompt_lengths = {sz.prefill};  // compiled alongside the decode step (LlamaGenerator::compile_steps)
  double cold_load_ms, cold_compile_ms;
  CompileStats::Cache cold_cache;
  {
    auto gen = must(models::LlamaGenerator::load(cpu, store, go), tag + ": load");
    cold_load_ms = gen->load_ms();
    cold_compile_ms = gen->compile_ms();
    cold_cache = gen->cache();
  }
  auto gen = must(models::LlamaGenerator::load(cpu, store, go), tag + ": load (cached)");
  std::printf("  %s: load %.0f ms (%s of %s weights, from memory), compile decode + prefill %lld: cold %.0f ms "
              "(cache %s), again %.0f ms (cache %s; load %.0f ms)\n",
              tag.c_str(), cold_load_ms, mib(held_bytes(store, wk, "", wk.quant.has_value())).c_str(), wname.c_str(),
              static_cast<long long>(sz.prefill), cold_compile_ms, cache_result_name(cold_cache), gen->compile_ms(),
              cache_result_name(gen->cache()), gen->load_ms());
  std::fflush(stdout);

  // The check: the last logits of one N-token prefill against N decode steps
  // (same weights, same positions; only the kernels and summation order differ,
  // and with Q weights the decode steps' activations, rounded to int8 blocks:
  // there the error is measured against the largest logit, as for
  // llama_gguf_test's int8 activations).
  const std::vector<int32_t> tokens = fake_tokens(static_cast<size_t>(std::max(sz.prefill, sz.decode + 1)), m.vocab);
  const std::span<const int32_t> prompt(tokens.data(), static_cast<size_t>(sz.prefill));
  must(gen->reset(), tag + ": reset");
  const std::vector<float> ref = must(gen->forward(prompt), tag + ": prefill");
  must(gen->reset(), tag + ": reset");
  std::vector<float> one_by_one;
  for (int32_t tok : prompt) one_by_one = must(gen->forward(std::span<const int32_t>(&tok, 1)), tag + ": decode");
  double err = 0, tolerance = 1e-3;
  std::string metric = "max |x-ref|/max(|ref|,1) of the logits";
  // bf16 weights on an AMD AVX-512 BF16 host: both paths round their
  // activations to bf16 for vdpbf16ps (CpuOptions::bf16_kernels), and a value
  // that lands on the other side of a rounding boundary in one of them
  // (their f32 sums differ in the last bits) differs by a bf16 ulp there:
  // measured against the largest logit too.
  const bool bf16_activations =
      wk.dtype == DType::kBF16 && !wk.quant && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_is("amd");
  if (wk.quant || bf16_activations) {
    double largest = 0;
    for (float r : ref) largest = std::max(largest, static_cast<double>(std::fabs(r)));
    for (size_t i = 0; i < ref.size(); ++i)
      err = std::max(err, std::fabs(static_cast<double>(one_by_one[i]) - ref[i]) / std::max(largest, 1e-30));
    if (!std::isfinite(largest)) err = NAN;
    tolerance = wk.quant ? 3e-2 : 1e-2;
    metric = wk.quant ? "max |x-ref| / max |ref| of the logits (decode rounds activations to int8 blocks)"
                      : "max |x-ref| / max |ref| of the logits (both round activations to bf16 for vdpbf16ps)";
  } else {
    err = max_rel_err(one_by_one.data(), ref.data(), ref.size(), 1.0);
  }
  const bool ok = table.check(tag + " prefill " + std::to_string(sz.prefill) + " vs as many decode steps",
                              {{"radix", err}}, tolerance, metric);

  // The peers' data: a buffer as large as a decode step's reads (a CPU
  // buffer, in the huge-page memory the weights are in); the representative
  // sgemm's operands.
  const double bytes_per_token = decode_bytes_per_token(store, wk);
  std::optional<Buffer> weights_copy;
  std::unique_ptr<ParallelRead> reader;
  if (want_decode) {
    const auto n = static_cast<int64_t>(bytes_per_token / sizeof(float));
    weights_copy.emplace(upload_random(Shape(DType::kF32, {n}), -1, 1, 7));
    reader = std::make_unique<ParallelRead>(static_cast<const float*>(weights_copy->device_ptr()), size_t(n), t);
  }
  const int gm = static_cast<int>(sz.prefill), gn = m.hidden, gk = m.dim;
  std::vector<float> ga(static_cast<size_t>(gm) * gk), gb(static_cast<size_t>(gn) * gk), gc(static_cast<size_t>(gm) * gn);
  fill_random(ga.data(), ga.size(), -1, 1, 8);
  fill_random(gb.data(), gb.size(), -1, 1, 9);

  std::vector<Timed> cs;
  enum Slot { kPrefill, kDecode, kRead, kSgemm, kLlamaCpp };
  std::vector<Slot> slot;
  auto timed = [](const std::function<void()>& f) {
    const auto t0 = Clock::now();
    f();
    return seconds_since(t0);
  };
  if (want_prefill && ok) {
    cs.push_back({[&] {
                    must(gen->reset(), tag + ": reset");
                    return timed([&] { must(gen->forward(prompt), tag + ": prefill"); });
                  },
                  {}});
    slot.push_back(kPrefill);
  }
  if (want_decode && ok) {
    cs.push_back({[&] {
                    must(gen->reset(), tag + ": reset");
                    must(gen->forward(std::span<const int32_t>(tokens.data(), 1)), tag + ": decode");
                    return timed([&] {
                      for (int64_t i = 1; i <= sz.decode; ++i)
                        must(gen->forward(std::span<const int32_t>(&tokens[static_cast<size_t>(i)], 1)), tag + ": decode");
                    });
                  },
                  {}});
    slot.push_back(kDecode);
  }
  if (want_decode) {
    cs.push_back({[&] { return timed([&] { reader->run(); }); }, {}});
    slot.push_back(kRead);
  }
  if (want_prefill) {
    // [N, dim] . W[hidden, dim]^T: Llama's layout, the w1 / w3 projection.
    cs.push_back({[&] {
                    return timed([&] {
                      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, gm, gn, gk, 1.f, ga.data(), gk, gb.data(),
                                  gk, 0.f, gc.data(), gn);
                    });
                  },
                  [t] { openblas_set_num_threads(t); }});
    slot.push_back(kSgemm);
  }
  // llama.cpp: one llama-bench process per round (-r 1: its warm-up run, then
  // one timed prefill and one timed decode), in the same rotation as the
  // others; the two calibration calls' samples are dropped. Its timed part is
  // the whole process; returning at least min_loop_s keeps it to one call a round.
  LlamaCppFigures lc;
  std::vector<double> lc_prefill, lc_decode;
  int lc_calls = 0;
  if (!gguf.empty()) {
    cs.push_back({[&] {
                    const auto t0 = Clock::now();
                    if (lc.error.empty()) {
                      const LlamaCppFigures f = run_llama_bench(
                          o.llama_bench, gguf, want_prefill ? sz.prefill : 0, want_decode ? sz.decode : 0, t, 1,
                          gguf_params(store), gguf + ".t" + std::to_string(t) + ".stderr");
                      lc.command = f.command;
                      lc.error = f.error;
                      if (f.error.empty() && ++lc_calls > 2) {
                        if (std::isfinite(f.prefill)) lc_prefill.push_back(f.prefill);
                        if (std::isfinite(f.decode)) lc_decode.push_back(f.decode);
                      }
                    }
                    return std::max(seconds_since(t0), o.min_loop_s);
                  },
                  {}});
    slot.push_back(kLlamaCpp);
  }
  const std::vector<double> sec = cs.empty() ? std::vector<double>{} : timed_rounds(cs, o);
  double prefill_s = NAN, decode_s = NAN, read_s = NAN, sgemm_s = NAN;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (slot[i] == kLlamaCpp) continue;
    (slot[i] == kPrefill ? prefill_s : slot[i] == kDecode ? decode_s : slot[i] == kRead ? read_s : sgemm_s) = sec[i];
  }
  if (!gguf.empty()) {
    if (lc.error.empty()) {
      lc.prefill = median(lc_prefill);
      lc.decode = median(lc_decode);
      std::printf("  %s: llama.cpp (%s, %zu runs): prefill %s tok/s, decode %s tok/s\n", tag.c_str(),
                  lc.command.c_str(), std::max(lc_prefill.size(), lc_decode.size()),
                  std::isfinite(lc.prefill) ? std::to_string(std::lround(lc.prefill)).c_str() : "-",
                  std::isfinite(lc.decode) ? std::to_string(std::lround(lc.decode)).c_str() : "-");
    } else {
      std::printf("  %s: WARNING: no llama.cpp figures: %s\n", tag.c_str(), lc.error.c_str());
    }
    std::fflush(stdout);
  }

  const std::string failed = ok ? "" : "radix failed its check; ";
  char note[320];
  if (want_prefill) {
    // Only the last token goes through the classifier: once per prefill.
    const double sgemm_flops = 2.0 * gm * gn * gk / sgemm_s;
    const double flops_per_token = 2.0 * (m.layer_matmul_params() + m.classifier_params() / static_cast<double>(sz.prefill));
    std::snprintf(note, sizeof note,
                  "%ssgemm [%d,%d].[%d,%d] %.1f GFLOP/s; 2 x %.2fM matmul params/token + classifier %.2fM once; "
                  "attention not counted",
                  failed.c_str(), gm, gk, gk, gn, sgemm_flops / 1e9, m.layer_matmul_params() / 1e6,
                  m.classifier_params() / 1e6);
    std::vector<PeerValue> peers = {{"sgemm-rate", sgemm_flops / flops_per_token}};
    if (!gguf.empty()) peers.push_back({"llama.cpp", lc.prefill});
    rows.prefill.push_back({pname, t, "tok/s", static_cast<double>(sz.prefill) / prefill_s, peers, note});
  }
  if (want_decode) {
    const bool in_llc = o.l3_bytes > 0 && bytes_per_token <= static_cast<double>(o.l3_bytes);
    std::snprintf(note, sizeof note,
                  "%sweights %s %s (tied classifier), %s read per token (all but the embedding table); read %.1f "
                  "GB/s%s; KV cache reads not counted",
                  failed.c_str(), mib(weight_bytes(store, wk)).c_str(), wname.c_str(), mib(bytes_per_token).c_str(),
                  bytes_per_token / read_s / 1e9, in_llc ? " (fits in the LLC)" : "");
    std::vector<PeerValue> peers = {{"roofline", 1.0 / read_s}};
    if (!gguf.empty()) peers.push_back({"llama.cpp", lc.decode});
    rows.decode.push_back({dname, t, "tok/s", static_cast<double>(sz.decode) / decode_s, peers, note});
  }
  std::printf("  %s: prefill %s tok/s, decode %s tok/s\n", tag.c_str(),
              std::isfinite(prefill_s) ? std::to_string(std::lround(sz.prefill / prefill_s)).c_str() : "-",
              std::isfinite(decode_s) ? std::to_string(std::lround(sz.decode / decode_s)).c_str() : "-");
  std::fflush(stdout);
}

// ------------------------------------------------------------ the writers

// GGUF v3 (llama.cpp's format; see io/gguf.h for the layout), F32, BF16,
// Q8_0 and Q4_0 tensors only: what --write-models and the llama.cpp peer need.
class GgufWriter {
 public:
  void u32(const std::string& key, uint32_t v) { kv(key, 4, raw(v)); }
  void f32(const std::string& key, float v) { kv(key, 6, raw(v)); }
  void str(const std::string& key, const std::string& v) { kv(key, 8, gstr(v)); }
  // An array of `count` items of `type`, already encoded.
  void array(const std::string& key, uint32_t type, uint64_t count, const std::string& items) {
    kv(key, 9, raw(type) + raw(count) + items);
  }
  // An F32 or BF16 tensor, its bytes as `shape` holds them (they must
  // outlive the writer).
  void tensor(const std::string& name, const Shape& shape, std::span<const std::byte> data) {
    if (shape.dtype() != DType::kF32 && shape.dtype() != DType::kBF16)
      throw std::logic_error("GgufWriter: " + name + " is " + std::string(dtype_name(shape.dtype())));
    typed_tensor(name, shape.dims(), shape.dtype() == DType::kF32 ? io::GgmlType::kF32 : io::GgmlType::kBF16, data);
  }
  // A [n, k] matrix as GGUF's Q8_0 / Q4_0 blocks (each block: its f16 scale,
  // then its 32 values: 32 int8, or 16 bytes holding elements j and j + 16),
  // built from quantize()'s separate arrays.
  void quantized_tensor(const std::string& name, QuantFormat f, const io::QuantizedMatrix& q, int64_t n, int64_t k) {
    const size_t blocks = static_cast<size_t>(n * k / kQuantBlock), value_bytes = q.values.size() / blocks;
    std::vector<std::byte> b(blocks * (2 + value_bytes));
    for (size_t i = 0; i < blocks; ++i) {
      std::memcpy(&b[i * (2 + value_bytes)], &q.scales[i * 2], 2);
      std::memcpy(&b[i * (2 + value_bytes) + 2], &q.values[i * value_bytes], value_bytes);
    }
    owned_.push_back(std::move(b));
    const std::array<int64_t, 2> dims = {n, k};
    typed_tensor(name, dims, f == QuantFormat::kQ8_0 ? io::GgmlType::kQ8_0 : io::GgmlType::kQ4_0, owned_.back());
  }
  // Writes to `path` through a temp file renamed over it.
  Status write(const std::string& path) const {
    std::string head = "GGUF" + raw(uint32_t{3}) + raw(tensors_) + raw(kvs_) + kv_ + infos_;
    head.append((kAlign - head.size() % kAlign) % kAlign, '\0');
    const std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(head.data(), static_cast<std::streamsize>(head.size()));
      for (std::span<const std::byte> d : data_) {
        f.write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
        const std::string pad((kAlign - d.size() % kAlign) % kAlign, '\0');
        f.write(pad.data(), static_cast<std::streamsize>(pad.size()));
      }
      if (!f.flush()) return io_error("cannot write " + tmp);
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) return io_error("cannot rename " + tmp + " to " + path + ": " + ec.message());
    return Status();
  }
  template <class T>
  static std::string raw(T v) {
    return std::string(reinterpret_cast<const char*>(&v), sizeof v);
  }
  static std::string gstr(const std::string& s) { return raw(static_cast<uint64_t>(s.size())) + s; }

 private:
  static constexpr uint64_t kAlign = 32;  // GGUF's default general.alignment
  void kv(const std::string& key, uint32_t type, const std::string& value) {
    kv_ += gstr(key) + raw(type) + value;
    ++kvs_;
  }
  void typed_tensor(const std::string& name, std::span<const int64_t> dims, io::GgmlType type,
                    std::span<const std::byte> data) {
    infos_ += gstr(name) + raw(static_cast<uint32_t>(dims.size()));
    for (size_t a = dims.size(); a-- > 0;) infos_ += raw(static_cast<uint64_t>(dims[a]));  // ne[0] fastest
    infos_ += raw(static_cast<uint32_t>(type)) + raw(offset_);  // offset in the data section
    offset_ += (data.size() + kAlign - 1) / kAlign * kAlign;
    data_.push_back(data);
    ++tensors_;
  }
  std::string kv_, infos_;
  uint64_t kvs_ = 0, tensors_ = 0, offset_ = 0;
  std::vector<std::span<const std::byte>> data_;
  std::deque<std::vector<std::byte>> owned_;  // quantized tensors' blocks (stable addresses)
};

// llama.cpp's tensor name of a Radix (llama2.c) name; "" for the tied output.
std::string gguf_name(const std::string& n) {
  if (n == "tok_embeddings") return "token_embd.weight";
  if (n == "norm") return "output_norm.weight";
  if (n == "output") return "";
  static const std::pair<const char*, const char*> kLayer[] = {
      {"attention_norm", "attn_norm"}, {"attention.wq", "attn_q"},      {"attention.wk", "attn_k"},
      {"attention.wv", "attn_v"},      {"attention.wo", "attn_output"}, {"ffn_norm", "ffn_norm"},
      {"feed_forward.w1", "ffn_gate"}, {"feed_forward.w2", "ffn_down"}, {"feed_forward.w3", "ffn_up"}};
  const size_t dot = n.find('.', 7);  // "layers.<i>.<rest>"
  for (auto [a, b] : kLayer)
    if (n.substr(dot + 1) == a) return "blk." + n.substr(7, dot - 7) + "." + b + ".weight";
  throw std::logic_error("no GGUF name for " + n);
}

// llama2.c's RoPE and the weights need no permutation: llama.cpp's "llama"
// architecture rotates consecutive pairs, as llama2.c does. The vocabulary
// is a placeholder SentencePiece one (<unk>, <s>, </s>, the 256 byte tokens,
// then "▁t<i>", m.vocab tokens in all: llama.cpp checks the count against
// token_embd's rows) so that llama.cpp loads the file; the token ids are what
// a benchmark feeds. Tensors as the store holds them (F32, or BF16 matrices
// from bf16_store, with F32 norms), or with `wk.quant` every matrix of the
// F32 store quantized to its blocks (the embedding table too: llama.cpp's
// tied classifier reads it) and the norms F32.
Status write_gguf(const std::string& path, const LlmModel& m, const io::WeightStore& store, const WeightKind& wk) {
  const bool bf16 = store.find("tok_embeddings")->shape.dtype() == DType::kBF16;
  if (bf16 != (wk.dtype == DType::kBF16 && !wk.quant))
    return invalid_argument("write_gguf: " + wk.name() + " weights from a " +
                            std::string(dtype_name(store.find("tok_embeddings")->shape.dtype())) + " store");
  GgufWriter w;
  w.str("general.architecture", "llama");
  w.str("general.name", std::string(m.name) + "-random" + (wk.name() == "f32" ? "" : "-" + wk.name()));
  w.u32("general.alignment", 32);
  // LLAMA_FTYPE_ALL_F32, MOSTLY_BF16, MOSTLY_Q8_0, MOSTLY_Q4_0
  w.u32("general.file_type", !wk.quant ? (bf16 ? 32 : 0) : *wk.quant == QuantFormat::kQ8_0 ? 7 : 2);
  w.u32("llama.context_length", static_cast<uint32_t>(m.seq_len));
  w.u32("llama.embedding_length", static_cast<uint32_t>(m.dim));
  w.u32("llama.block_count", static_cast<uint32_t>(m.layers));
  w.u32("llama.feed_forward_length", static_cast<uint32_t>(m.hidden));
  w.u32("llama.rope.dimension_count", static_cast<uint32_t>(m.dim / m.heads));
  w.u32("llama.attention.head_count", static_cast<uint32_t>(m.heads));
  w.u32("llama.attention.head_count_kv", static_cast<uint32_t>(m.kv_heads));
  w.f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.f32("llama.rope.freq_base", 10000.f);
  w.u32("llama.vocab_size", static_cast<uint32_t>(m.vocab));
  w.str("tokenizer.ggml.model", "llama");
  std::string tokens, scores, types;
  for (int32_t i = 0; i < m.vocab; ++i) {
    std::string piece;
    int32_t type = 1;  // normal
    if (i == 0) piece = "<unk>", type = 2;
    else if (i == 1) piece = "<s>", type = 3;
    else if (i == 2) piece = "</s>", type = 3;
    else if (i < 259) {
      char b[8];
      std::snprintf(b, sizeof b, "<0x%02X>", i - 3);
      piece = b, type = 6;
    } else {
      piece = "\xE2\x96\x81t" + std::to_string(i);
    }
    tokens += GgufWriter::gstr(piece);
    scores += GgufWriter::raw(type == 1 ? -static_cast<float>(i) : 0.f);
    types += GgufWriter::raw(type);
  }
  w.array("tokenizer.ggml.tokens", 8, static_cast<uint64_t>(m.vocab), tokens);
  w.array("tokenizer.ggml.scores", 6, static_cast<uint64_t>(m.vocab), scores);
  w.array("tokenizer.ggml.token_type", 5, static_cast<uint64_t>(m.vocab), types);
  w.u32("tokenizer.ggml.unknown_token_id", 0);
  w.u32("tokenizer.ggml.bos_token_id", 1);
  w.u32("tokenizer.ggml.eos_token_id", 2);
  for (const io::TensorInfo& t : store.tensors()) {
    const std::string name = gguf_name(t.name);
    if (name.empty()) continue;  // tied: llama.cpp reuses token_embd.weight
    RADIX_ASSIGN_OR_RETURN(std::span<const std::byte> bytes, store.bytes(t.name));
    if (wk.quant && t.shape.rank() == 2) {
      const std::span<const float> f(reinterpret_cast<const float*>(bytes.data()), static_cast<size_t>(t.shape.count()));
      RADIX_ASSIGN_OR_RETURN(io::QuantizedMatrix q, io::quantize(*wk.quant, f, t.shape.dim(0), t.shape.dim(1)));
      w.quantized_tensor(name, *wk.quant, q, t.shape.dim(0), t.shape.dim(1));
    } else {
      w.tensor(name, t.shape, bytes);
    }
  }
  return w.write(path);
}

// llama2.c's checkpoint (io/llama2c.h): header, the arrays layer-major by
// kind, and the RoPE tables as its export.py writes them (today's run.c
// skips them; older ones read them).
Status write_llama2c(const std::string& path, const LlmModel& m, const io::WeightStore& store) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    const int32_t header[7] = {m.dim, m.hidden, m.layers, m.heads, m.kv_heads, m.vocab /* > 0: tied */, m.seq_len};
    f.write(reinterpret_cast<const char*>(header), sizeof header);
    auto put = [&](const std::string& name) -> Status {
      RADIX_ASSIGN_OR_RETURN(std::span<const std::byte> b, store.bytes(name));
      f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
      return Status();
    };
    RADIX_RETURN_IF_ERROR(put("tok_embeddings"));
    for (const char* kind : {"attention_norm", "attention.wq", "attention.wk", "attention.wv", "attention.wo",
                             "ffn_norm", "feed_forward.w1", "feed_forward.w2", "feed_forward.w3"})
      for (int i = 0; i < m.layers; ++i) RADIX_RETURN_IF_ERROR(put("layers." + std::to_string(i) + "." + kind));
    RADIX_RETURN_IF_ERROR(put("norm"));
    const int half = m.dim / m.heads / 2;
    std::vector<float> re, im;
    for (int p = 0; p < m.seq_len; ++p)
      for (int i = 0; i < half; ++i) {
        const double a = p * std::pow(10000.0, -2.0 * i / (2.0 * half));
        re.push_back(static_cast<float>(std::cos(a)));
        im.push_back(static_cast<float>(std::sin(a)));
      }
    f.write(reinterpret_cast<const char*>(re.data()), static_cast<std::streamsize>(re.size() * sizeof(float)));
    f.write(reinterpret_cast<const char*>(im.data()), static_cast<std::streamsize>(im.size() * sizeof(float)));
    if (!f.flush()) return io_error("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return io_error("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status();
}

// Reopens a written file the way `radix generate` does: the same
// configuration, and every model tensor byte-identical to the store's.
Status verify_written(const std::string& path, const io::WeightStore& src) {
  RADIX_ASSIGN_OR_RETURN(std::unique_ptr<io::WeightStore> back, io::open_weights(path));
  RADIX_ASSIGN_OR_RETURN(models::LlamaConfig want, models::llama_config_from(src));
  RADIX_ASSIGN_OR_RETURN(models::LlamaConfig got, models::llama_config_from(*back));
  if (got.to_string() != want.to_string() || got.tied_classifier != want.tied_classifier)
    return invalid_argument(path + ": reads back as " + got.to_string() + ", expected " + want.to_string());
  auto name = models::llama_weight_names(*back);
  for (const io::TensorInfo& t : src.tensors()) {
    RADIX_ASSIGN_OR_RETURN(std::span<const std::byte> a, src.bytes(t.name));
    RADIX_ASSIGN_OR_RETURN(std::span<const std::byte> b, back->bytes(name(t.name)));
    if (a.size() != b.size() || std::memcmp(a.data(), b.data(), a.size()) != 0)
      return invalid_argument(path + ": tensor " + t.name + " (" + name(t.name) + ") differs from the one written");
  }
  return Status();
}

// The GGUF of weight kind `wk` made from the f32 store, written to `path`
// and read back by Radix's GGUF loader (verify_written).
Status write_kind_gguf(const std::string& path, const LlmModel& m, const io::WeightStore& f32, const WeightKind& wk) {
  std::unique_ptr<io::BasicWeightStore> held;  // what the file holds, as Radix reads it back
  if (wk.quant) held = dequantized_store(f32, *wk.quant);
  else if (wk.dtype == DType::kBF16) held = bf16_store(f32);
  RADIX_RETURN_IF_ERROR(write_gguf(path, m, wk.dtype == DType::kBF16 ? *held : f32, wk));
  return verify_written(path, held ? *held : f32);
}
std::string gguf_kind_name(const WeightKind& wk) {
  std::string n = wk.name();
  for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return n;
}

}  // namespace

std::vector<std::string> llm_case_names(const BenchOptions& o) {
  std::vector<std::string> names;
  for (const LlmModel* m : llm_models(o))
    for (const WeightKind& wk : kWeightKinds) {
      names.push_back(prefill_case(*m, wk, o));
      names.push_back(decode_case(*m, wk, o));
    }
  return names;
}

std::string default_llama_bench_path() {
  const char* dir = std::getenv("RADIX_LLAMA_CPP_DIR");
  const char* home = std::getenv("HOME");
  std::string base;
  if (dir && *dir) base = dir;
  else if (home && *home) base = std::string(home) + "/.cache/radix/llama.cpp";
  else return "";
  return base + "/build/bin/llama-bench";
}

std::string llama_bench_version(const std::string& path) {
  FILE* p = popen((shell_quote(path) + " --version 2>&1").c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[1024];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  out = out.substr(0, out.find('\n'));
  if (out.rfind("version: ", 0) == 0) out = out.substr(9);
  return out;
}

void add_llm_rows(const BenchOptions& o, BenchTable& table) {
  LlmRows rows;
  for (const LlmModel* m : llm_models(o)) {
    bool wanted = false;
    for (const WeightKind& wk : kWeightKinds) wanted |= wants_kind(*m, wk, o);
    if (!wanted) continue;
    try {
      const auto t0 = Clock::now();
      const std::unique_ptr<io::BasicWeightStore> store = random_store(*m);
      std::printf("  llm %s: random f32 weights, %s (%s with the tied classifier's copy) in %.1f s\n", m->name,
                  mib(weight_bytes(*store, kWeightKinds[0])).c_str(), mib(static_cast<double>(store->total_bytes())).c_str(),
                  seconds_since(t0));
      // The llama.cpp peer's GGUFs (F32, BF16, Q8_0, Q4_0), each read back by Radix's GGUF loader.
      std::unique_ptr<TempDir> gguf_dir;
      std::map<std::string, std::string> gguf;  // weight kind name -> file
      if (!o.llama_bench.empty()) {
        gguf_dir = std::make_unique<TempDir>("radix-bench-gguf");
        for (const WeightKind& wk : kWeightKinds) {
          if (!wants_kind(*m, wk, o)) continue;
          const auto t1 = Clock::now();
          const std::string path = gguf_dir->path() + "/" + m->name + "-random-" + wk.name() + ".gguf";
          Status s = write_kind_gguf(path, *m, *store, wk);
          if (!s.ok()) {
            table.fail(std::string("llm ") + m->name + " GGUF for llama.cpp", s.to_string());
            continue;
          }
          gguf[wk.name()] = path;
          std::printf("  llm %s: %s GGUF for llama.cpp, %s, written and read back in %.1f s\n", m->name,
                      gguf_kind_name(wk).c_str(), mib(static_cast<double>(fs::file_size(path))).c_str(),
                      seconds_since(t1));
        }
      }
      for (const WeightKind& wk : kWeightKinds)
        for (int t : o.threads)
          llm_case(*m, *store, wk, t, o, gguf.count(wk.name()) ? gguf[wk.name()] : "", table, rows);
    } catch (const std::exception& e) {
      table.fail(std::string("llm ") + m->name, e.what());
    }
  }
  // Prefill rows then decode rows: one table each (rows with the same peers).
  for (BenchRow& r : rows.prefill) table.add(std::move(r));
  for (BenchRow& r : rows.decode) table.add(std::move(r));
}

int write_llm_models(const BenchOptions& o) {
  const fs::path dir = o.write_models_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "radix bench: --write-models: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
    return 1;
  }
  int written = 0;
  for (const LlmModel* m : llm_models(o)) {
    bool wanted = false;
    for (const WeightKind& wk : kWeightKinds) wanted |= wants_kind(*m, wk, o);
    if (!wanted) continue;
    const std::unique_ptr<io::BasicWeightStore> store = random_store(*m);
    const std::string stem = (dir / (std::string(m->name) + "-random")).string();
    const std::unique_ptr<io::BasicWeightStore> bf16 = bf16_store(*store);
    const std::unique_ptr<io::BasicWeightStore> q8 = dequantized_store(*store, QuantFormat::kQ8_0);
    const std::unique_ptr<io::BasicWeightStore> q4 = dequantized_store(*store, QuantFormat::kQ4_0);
    struct Out {
      std::string path, what;
      std::function<Status()> write;
      const io::WeightStore* written;  // what the file must read back as
    };
    const std::vector<Out> outs = {
        {stem + ".safetensors", "Radix names + llama2c.* metadata (radix generate)",
         [&] { return io::write_safetensors(stem + ".safetensors", *store); }, store.get()},
        {stem + ".gguf", "llama.cpp names, F32, placeholder vocabulary",
         [&] { return write_gguf(stem + ".gguf", *m, *store, kWeightKinds[0]); }, store.get()},
        {stem + "-bf16.gguf", "llama.cpp names, BF16 matrices (round to nearest even) + F32 norms",
         [&] { return write_gguf(stem + "-bf16.gguf", *m, *bf16, kWeightKinds[1]); }, bf16.get()},
        {stem + "-q8_0.gguf", "llama.cpp names, Q8_0 matrices (llama.cpp's rounding) + F32 norms",
         [&] { return write_gguf(stem + "-q8_0.gguf", *m, *store, kWeightKinds[2]); }, q8.get()},
        {stem + "-q4_0.gguf", "llama.cpp names, Q4_0 matrices (llama.cpp's rounding) + F32 norms",
         [&] { return write_gguf(stem + "-q4_0.gguf", *m, *store, kWeightKinds[3]); }, q4.get()},
        {stem + ".bin", "llama2.c checkpoint", [&] { return write_llama2c(stem + ".bin", *m, *store); }, store.get()},
    };
    for (const Out& out : outs) {
      Status s = out.write();
      if (s.ok()) s = verify_written(out.path, *out.written);
      if (!s.ok()) {
        std::fprintf(stderr, "radix bench: --write-models: %s\n", s.to_string().c_str());
        return 1;
      }
      std::printf("wrote %s (%s; %s): reopened, same configuration and tensors\n", out.path.c_str(),
                  mib(static_cast<double>(fs::file_size(out.path))).c_str(), out.what.c_str());
      ++written;
    }
  }
  if (written == 0) {
    std::string all;
    for (const std::string& n : llm_case_names(o)) all += "\n  " + n;
    std::fprintf(stderr, "radix bench: --write-models: no LLM case matches --filter '%s'; the cases are:%s\n",
                 o.filter.c_str(), all.c_str());
    return 2;
  }
  return 0;
}

}  // namespace radix::cli::bench
