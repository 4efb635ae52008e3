// A program outside the build, compiled by outside_program_test.cc with the
// README's command line (g++ -std=c++20 ... -lradix -Wl,-rpath,...): a new
// user's first build. Prints y = x * x + 1 for x = 0..3.
#include <cstdio>

#include "radix/radix.h"
using namespace radix;

int main() {
  Platform cpu = Platform::cpu();
  Shape s(DType::kF32, {4});
  auto exe = compile_fn(cpu, [](Tensor x) { return x * x + 1.0; }, s);
  if (!exe.ok()) {
    std::fprintf(stderr, "%s\n", exe.status().to_string().c_str());
    return 1;
  }
  Result<Buffer> y = exe->call(*cpu.buffer(s, {0.f, 1.f, 2.f, 3.f}));
  for (float v : *y->to_host<float>()) std::printf("%g ", v);
  std::printf("\n");
  return 0;
}
