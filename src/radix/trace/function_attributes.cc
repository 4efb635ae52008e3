#include "radix/trace/function_attributes.h"

#include <algorithm>
#include <vector>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "radix/trace/trace_error.h"

namespace radix::detail {

namespace {
constexpr const char* kAliasing = "tf.aliasing_output";

void check_count(mlir::func::FuncOp fn, const char* what, size_t got, unsigned want) {
  if (got != want)
    throw TraceError("internal: " + std::string(what) + " for " + std::to_string(got) + " values, but @" +
                     fn.getSymName().str() + " has " + std::to_string(want));
}
}  // namespace

void write_argument_names(mlir::func::FuncOp fn, std::span<const std::string> names) {
  mlir::Builder b(fn.getContext());
  for (size_t i = 0; i < names.size() && i < fn.getNumArguments(); ++i)
    if (!names[i].empty()) fn.setArgAttr(static_cast<unsigned>(i), "radix.name", b.getStringAttr(names[i]));
}

void write_donations(mlir::func::FuncOp fn, std::span<const int> output_donations, std::span<const Shape> inputs) {
  check_count(fn, "donations", output_donations.size(), fn.getNumResults());
  mlir::Builder b(fn.getContext());
  for (size_t o = 0; o < output_donations.size(); ++o) {
    const int a = output_donations[o];
    if (a < 0) continue;
    if (static_cast<unsigned>(a) >= fn.getNumArguments())
      throw TraceError("internal: result " + std::to_string(o) + " donates into argument " + std::to_string(a) +
                       ", past the " + std::to_string(fn.getNumArguments()) + " arguments");
    const unsigned arg = static_cast<unsigned>(a);
    if (auto earlier = fn.getArgAttrOfType<mlir::IntegerAttr>(arg, kAliasing)) {
      const std::string shape = static_cast<size_t>(a) < inputs.size() ? inputs[arg].to_string() : "?";
      throw TraceError("argument " + std::to_string(a) + " (" + shape + ") is donated to two results, " +
                       std::to_string(earlier.getInt()) + " and " + std::to_string(o) +
                       ": a buffer can be reused by one result only (reuse_buffer)");
    }
    fn.setArgAttr(arg, kAliasing, b.getI32IntegerAttr(static_cast<int32_t>(o)));
  }
}

void write_output_memory_kinds(mlir::func::FuncOp fn, std::span<const MemoryKind> kinds) {
  check_count(fn, "memory kinds", kinds.size(), fn.getNumResults());
  mlir::Builder b(fn.getContext());
  for (size_t o = 0; o < kinds.size(); ++o) {
    if (kinds[o] == MemoryKind::kDevice) continue;  // the default: no attribute
    const std::string_view name = memory_kind_name(kinds[o]);
    fn.setResultAttr(static_cast<unsigned>(o), "mhlo.memory_kind", b.getStringAttr(llvm::StringRef(name.data(), name.size())));
  }
}

namespace {
// Appends "v" to a comma-separated list whose element `index` it is.
void append_number(std::string& s, int64_t index, int64_t v) {
  if (index) s += ',';
  s += std::to_string(v);
}
}  // namespace

std::string sharding_representation(const Shape& shape, const Mesh& mesh) {
  const int64_t n = mesh.num_devices();
  if (!shape.partitioned() || n == 1) return "{replicated}";
  // The tile of each tensor axis: its mesh axis' size, 1 if replicated.
  std::string s = "{devices=[";
  int64_t tiles = 1;
  std::vector<int> used;  // mesh axes in the order tensor axes use them
  bool repeated = false;
  for (int i = 0; i < shape.rank(); ++i) {
    auto a = shape.partition(i).empty() ? std::nullopt : mesh.find(shape.partition(i));
    const int64_t t = a ? mesh.size(*a) : 1;
    if (a) {
      repeated |= std::find(used.begin(), used.end(), *a) != used.end();
      used.push_back(*a);
    }
    tiles *= t;
    append_number(s, i, t);
  }
  // Mesh axes that split nothing replicate the tiles: one more tile dim.
  const bool replicate = !repeated && tiles < n;
  if (replicate) append_number(s, 1, n / tiles);
  s += "]<=[";
  // Devices: the mesh's iota, its axes transposed to the tile dims' order.
  std::vector<int> perm = used;
  for (int a = 0; a < mesh.rank(); ++a)
    if (std::find(used.begin(), used.end(), a) == used.end()) perm.push_back(a);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int>(i);
  if (repeated || identity) {
    s += std::to_string(n) + "]";
  } else {
    for (int a = 0; a < mesh.rank(); ++a) append_number(s, a, mesh.size(a));
    s += "]T(";
    for (size_t i = 0; i < perm.size(); ++i) append_number(s, static_cast<int64_t>(i), perm[i]);
    s += ")";
  }
  return s + (replicate ? " last_tile_dim_replicate}" : "}");
}

void write_shardings(mlir::func::FuncOp fn, std::span<const Shape> inputs, std::span<const Shape> outputs,
                     const Mesh& mesh) {
  if (mesh.single_device()) return;
  check_count(fn, "argument shardings", inputs.size(), fn.getNumArguments());
  check_count(fn, "result shardings", outputs.size(), fn.getNumResults());
  mlir::Builder b(fn.getContext());
  for (size_t i = 0; i < inputs.size(); ++i)
    fn.setArgAttr(static_cast<unsigned>(i), "mhlo.sharding", b.getStringAttr(sharding_representation(inputs[i], mesh)));
  for (size_t o = 0; o < outputs.size(); ++o)
    fn.setResultAttr(static_cast<unsigned>(o), "mhlo.sharding",
                     b.getStringAttr(sharding_representation(outputs[o], mesh)));
}

}  // namespace radix::detail
