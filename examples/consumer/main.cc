// An outside program built against an installed Radix (see CMakeLists.txt):
// a tagged linear layer, y = relu(x . w + b), checked against a plain loop.
#include <cmath>
#include <cstdio>

#include "radix/radix.h"
using namespace radix;

int main() {
  Platform cpu = Platform::cpu();
  const Shape xs(DType::kF32, {2, 3}, {"b", "d"}), ws(DType::kF32, {3, 2}, {"d", "o"}), bs(DType::kF32, {2}, {"o"});
  auto exe = compile_fn(cpu, [](Tensor x, Tensor w, Tensor b) { return relu(dot(x, w, "d") + b); }, xs, ws, bs);
  if (!exe.ok()) {
    std::fprintf(stderr, "%s\n", exe.status().to_string().c_str());
    return 1;
  }
  const std::vector<float> x = {1, -2, 3, 0.5f, 4, -1}, w = {1, 0, -1, 2, 0.5f, 1}, b = {0.25f, -3};
  Result<Buffer> y = exe->call(*cpu.buffer(xs, x), *cpu.buffer(ws, w), *cpu.buffer(bs, b));
  if (!y.ok()) {
    std::fprintf(stderr, "%s\n", y.status().to_string().c_str());
    return 1;
  }
  std::vector<float> got = *y->to_host<float>();
  int bad = 0;
  for (int i = 0; i < 2; ++i)
    for (int o = 0; o < 2; ++o) {
      float want = b[o];
      for (int d = 0; d < 3; ++d) want += x[i * 3 + d] * w[d * 2 + o];
      want = std::max(want, 0.f);
      if (std::fabs(got[i * 2 + o] - want) > 1e-6f) ++bad;
    }
  std::printf("consumer: %s %s, %d mismatches\n", y->shape().to_string().c_str(), bad ? "FAIL" : "OK", bad);
  return bad ? 1 : 0;
}
