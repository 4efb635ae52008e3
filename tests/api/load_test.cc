// Filling a model from a weight file (api/load.h): load_weights over a
// Shape structure, and compile_from_store — the model after its init, with
// shapes taken from the store, compiled and bound in one call.
#include <gtest/gtest.h>

#include <filesystem>

#include "radix/api/load.h"
#include "radix/io/safetensors.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

template <class T>
struct Block {
  T w, b;  // [in, out], [out]
  template <class V> void visit(V&& v) { v("w", w); v("b", b); }
};

template <class T>
struct Net {
  std::vector<Block<T>> blocks;
  T head;              // [hidden, classes]
  double scale = 1.0;  // a hyper-parameter set by the init, not a weight
  template <class V> void visit(V&& v) { v("blocks", blocks); v("head", head); }
  Tensor forward(Tensor x) const {
    for (const Block<T>& blk : blocks) x = relu(matmul(x, blk.w) + blk.b);
    return matmul(x, head) * scale;
  }
};

struct HostTensor {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> data;
};

std::vector<HostTensor> net_tensors() {
  return {{"blocks.0.w", {4, 8}, testing::random_vec<float>(32, -1, 1, 1)},
          {"blocks.0.b", {8}, testing::random_vec<float>(8, -1, 1, 2)},
          {"blocks.1.w", {8, 8}, testing::random_vec<float>(64, -1, 1, 3)},
          {"blocks.1.b", {8}, testing::random_vec<float>(8, -1, 1, 4)},
          {"head", {8, 3}, testing::random_vec<float>(24, -1, 1, 5)}};
}

// Writes the tensors (renamed by `rename`, minus `skip`) as a safetensors file.
std::string write(const std::vector<HostTensor>& ts, const std::string& file,
                  std::function<std::string(const std::string&)> rename = {}, const std::string& skip = "") {
  io::BasicWeightStore s;
  for (const HostTensor& t : ts)
    if (t.name != skip)
      EXPECT_TRUE(s.add_copy(rename ? rename(t.name) : t.name, Shape(DType::kF32, t.dims),
                             std::as_bytes(std::span<const float>(t.data))).ok());
  const std::string path = (std::filesystem::temp_directory_path() / (file + std::to_string(::getpid()))).string();
  EXPECT_TRUE(io::write_safetensors(path, s).ok());
  return path;
}

std::vector<float> reference(const std::vector<HostTensor>& ts, const std::vector<float>& x, int rows, double scale) {
  std::vector<float> h = x;
  int width = 4;
  for (int l = 0; l < 2; ++l) {
    const auto& w = ts[2 * l].data;
    const auto& b = ts[2 * l + 1].data;
    std::vector<float> o(rows * 8);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < 8; ++j) {
        double acc = b[j];
        for (int k = 0; k < width; ++k) acc += double(h[r * width + k]) * w[k * 8 + j];
        o[r * 8 + j] = static_cast<float>(std::max(acc, 0.0));
      }
    h = o;
    width = 8;
  }
  std::vector<float> y(rows * 3);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < 3; ++j) {
      double acc = 0;
      for (int k = 0; k < 8; ++k) acc += double(h[r * 8 + k]) * ts[4].data[k * 3 + j];
      y[r * 3 + j] = static_cast<float>(acc * scale);
    }
  return y;
}

Net<Tensor> init(int layers, double scale) {
  Net<Tensor> n;
  n.blocks.resize(static_cast<size_t>(layers));
  n.scale = scale;
  return n;
}

TEST(CompileFromStore, ShapesFromTheFileThenOneCall) {
  const auto ts = net_tensors();
  const std::string path = write(ts, "radix-load-");
  auto store = must(io::open_weights(path));
  auto exe = must(compile_from_store(cpu(), *store, init(2, 0.5), &Net<Tensor>::forward, CompileFnOptions{},
                                     LoadOptions{}, Shape(DType::kF32, {5, 4})));
  std::filesystem::remove(path);
  std::vector<float> x = testing::random_vec<float>(20, -1, 1, 9);
  Buffer y = must(exe.call(must(cpu().buffer(Shape(DType::kF32, {5, 4}), x))));
  EXPECT_TRUE(testing::all_close(must(y.to_host<float>()), reference(ts, x, 5, 0.5), 1e-5, 1e-6));
  EXPECT_EQ(exe.executable().signature().input_names[2], "blocks.1.w");
}

TEST(CompileFromStore, ForeignNamesThroughTheNameMap) {
  const auto ts = net_tensors();
  auto hf = [](const std::string& n) { return "model." + n + ".weight"; };
  const std::string path = write(ts, "radix-load-hf-", hf);
  auto store = must(io::open_weights(path));
  LoadOptions lo;
  lo.name_map = hf;
  auto exe = must(compile_from_store(cpu(), *store, init(2, 1.0), &Net<Tensor>::forward, CompileFnOptions{}, lo,
                                     Shape(DType::kF32, {1, 4})));
  std::filesystem::remove(path);
  std::vector<float> x = {0.5f, -1.f, 2.f, 0.25f};
  Buffer y = must(exe.call(must(cpu().buffer(Shape(DType::kF32, {1, 4}), x))));
  EXPECT_TRUE(testing::all_close(must(y.to_host<float>()), reference(ts, x, 1, 1.0), 1e-5, 1e-6));
}

TEST(CompileFromStore, EveryProblemIsListedByName) {
  const auto ts = net_tensors();
  const std::string path = write(ts, "radix-load-bad-", {}, "blocks.1.b");
  auto store = must(io::open_weights(path));
  Net<Tensor> net = init(3, 1.0);                          // one block more than the file has
  net.head = Tensor::placeholder(Shape(DType::kF32, {8, 2}));  // the file's head is [8, 3]
  auto exe = compile_from_store(cpu(), *store, net, &Net<Tensor>::forward, CompileFnOptions{}, LoadOptions{},
                                Shape(DType::kF32, {1, 4}));
  std::filesystem::remove(path);
  ASSERT_FALSE(exe.ok());
  const std::string& m = exe.status().message();
  EXPECT_NE(m.find("4 problems"), std::string::npos) << m;
  for (const char* want : {"missing tensor 'blocks.1.b'", "missing tensor 'blocks.2.w'", "missing tensor 'blocks.2.b'",
                           "'head': the model expects f32[8,2], the file has f32[8,3]"})
    EXPECT_NE(m.find(want), std::string::npos) << want << "\n" << m;
  EXPECT_NE(m.find(path), std::string::npos) << "the error names the file";
}

TEST(LoadWeights, ConvertsFloatDtypes) {
  // An f16 file into an f32 model (and back): values convert exactly when
  // they are representable in f16.
  io::BasicWeightStore s;
  std::vector<uint16_t> h = {float_to_f16(1.5f), float_to_f16(-2.f), float_to_f16(0.125f)};
  ASSERT_TRUE(s.add_copy("w", Shape(DType::kF16, {3}), std::as_bytes(std::span<const uint16_t>(h))).ok());
  std::vector<std::pair<std::string, Shape>> wanted = {{"w", Shape(DType::kF32, {3})}};
  std::vector<Buffer> b = must(load_tensors(cpu(), wanted, s));
  EXPECT_EQ(must(b[0].to_host<float>()), (std::vector<float>{1.5f, -2.f, 0.125f}));
}

}  // namespace
}  // namespace radix
