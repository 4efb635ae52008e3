#include <chrono>
#include <cstdio>
#include <cstring>

#include "radix/api/load.h"
#include "radix/core/half.h"

namespace radix {

namespace {


double read_float(DType d, const std::byte* p) {
  switch (d) {
    case DType::kF16: { uint16_t b; std::memcpy(&b, p, 2); return f16_to_float(b); }
    case DType::kBF16: { uint16_t b; std::memcpy(&b, p, 2); return bf16_to_float(b); }
    case DType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    default: { double f; std::memcpy(&f, p, 8); return f; }
  }
}

void write_float(DType d, double v, std::byte* p) {
  switch (d) {
    case DType::kF16: { uint16_t b = float_to_f16(static_cast<float>(v)); std::memcpy(p, &b, 2); break; }
    case DType::kBF16: { uint16_t b = float_to_bf16(static_cast<float>(v)); std::memcpy(p, &b, 2); break; }
    case DType::kF32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    default: std::memcpy(p, &v, 8);
  }
}

// Converts every element; f64 -> f16 goes through f32 (one extra rounding,
// far below f16's precision).
std::vector<std::byte> convert_floats(std::span<const std::byte> src, DType from, DType to, int64_t count) {
  std::vector<std::byte> out(static_cast<size_t>(count) * dtype_size(to));
  const size_t fs = dtype_size(from), ts = dtype_size(to);
  for (int64_t i = 0; i < count; ++i)
    write_float(to, read_float(from, src.data() + i * fs), out.data() + i * ts);
  return out;
}

}  // namespace

Result<std::vector<Buffer>> load_tensors(const Platform& platform,
                                         const std::vector<std::pair<std::string, Shape>>& wanted,
                                         const io::WeightStore& store, const LoadOptions& options, LoadStats* stats) {
  auto t0 = std::chrono::steady_clock::now();
  // Check everything first: one error naming every problem.
  std::vector<std::string> problems;
  std::vector<std::string> names;
  for (const auto& [path, shape] : wanted) {
    std::string name = options.name_map ? options.name_map(path) : path;
    const io::TensorInfo* info = store.find(name);
    std::string label = "'" + name + "'" + (name == path ? "" : " (model path " + path + ")");
    if (!info) {
      problems.push_back("missing tensor " + label);
    } else if (!info->shape.same_dims(shape)) {
      problems.push_back(label + ": the model expects " + shape.to_string() + ", the file has " +
                         info->shape.to_string());
    } else if (info->shape.dtype() != shape.dtype() && !(is_float(info->shape.dtype()) && is_float(shape.dtype()))) {
      problems.push_back(label + ": the model expects " + shape.to_string() + ", the file has " +
                         info->shape.to_string() + " (only float dtypes convert)");
    }
    names.push_back(std::move(name));
  }
  if (!problems.empty()) {
    std::string msg = "weights from " + store.path() + ": " + std::to_string(problems.size()) + " problem" +
                      (problems.size() == 1 ? "" : "s") + " filling " + std::to_string(wanted.size()) +
                      " tensors:";
    for (const std::string& p : problems) msg += "\n  " + p;
    return invalid_argument(msg);
  }

  std::vector<Buffer> out;
  out.reserve(wanted.size());
  uint64_t bytes = 0, total = 0;
  for (const auto& [path, shape] : wanted) total += shape.byte_size();
  auto last_report = t0;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const Shape& shape = wanted[i].second;
    const io::TensorInfo* info = store.find(names[i]);
    RADIX_ASSIGN_OR_RETURN(std::span<const std::byte> data, store.bytes(names[i]));
    bytes += data.size();
    if (info->shape.dtype() == shape.dtype()) {
      RADIX_ASSIGN_OR_RETURN(Buffer b, platform.bytes(shape, data));
      out.push_back(std::move(b));
    } else {
      std::vector<std::byte> conv = convert_floats(data, info->shape.dtype(), shape.dtype(), shape.count());
      RADIX_ASSIGN_OR_RETURN(Buffer b, platform.bytes(shape, conv));
      out.push_back(std::move(b));
    }
    auto now = std::chrono::steady_clock::now();
    if (options.progress && now - last_report > std::chrono::seconds(1)) {
      last_report = now;
      std::fprintf(stderr, "weights: %zu / %zu tensors, %.1f / %.1f MiB\n", i + 1, wanted.size(),
                   double(bytes) / (1 << 20), double(total) / (1 << 20));
    }
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (options.progress)
    std::fprintf(stderr, "weights: %zu tensors, %.2f MiB from %s in %.1f ms\n", wanted.size(),
                 double(bytes) / (1 << 20), store.path().c_str(), ms);
  if (stats) *stats = {wanted.size(), bytes, ms};
  return out;
}

}  // namespace radix
