// The `radix` CLI's commands beyond `example` (each in its own file).
#pragma once

namespace radix::cli {

// radix generate --model PATH [...]: streams text from a Llama model.
int run_generate(int argc, char** argv);
extern const char* kGenerateUsage;
// radix convert IN OUT.safetensors: writes any loaded weight store as safetensors.
int run_convert(int argc, char** argv);
extern const char* kConvertUsage;

// radix bench [--threads 1,2] [...]: Radix vs OpenBLAS, oneDNN, memcpy and
// hand-written loops in one run, as markdown tables of figures and ratios.
int run_bench(int argc, char** argv);
extern const char* kBenchUsage;

// radix bench-cuda [...]: the CUDA backend on GPU 0 (matmul TFLOP/s, copy
// bandwidth, Llama tokens/s, compile times); exits 1 without a GPU.
int run_bench_cuda(int argc, char** argv);
extern const char* kBenchCudaUsage;

}  // namespace radix::cli
