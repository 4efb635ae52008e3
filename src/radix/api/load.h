// Populating a model from a weight file (the seeds' compile(..., store)):
// every leaf of a model structure is filled from the store tensor of the
// same name, checked against the shape the model expects, and copied into a
// Buffer.
//
//   io::WeightStore& store = ...;                       // io::open_weights(path)
//   Llama<Shape> shapes = llama_shapes(config);         // the model's init
//   Result<Llama<Buffer>> w = load_weights(cpu, shapes, store);
//
// Naming rule: a leaf's name is its visit() path — field names joined by
// '.', vector / array elements by their index ("layers.3.attention.wq").
// LoadOptions::name_map translates that path into the store's name for a
// foreign checkpoint ("layers.3.attention.wq" -> "blk.3.attn_q.weight").
//
// Checks: every tensor must exist with the expected dims; a float tensor
// stored in another float dtype (f16 / bf16 / f32 / f64) is converted on
// load; anything else (a missing tensor, other dims, int vs float) is
// collected, and one kInvalidArgument lists every problem by name.
// Ownership: the returned Buffers are the caller's; the store is only read.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "radix/api/compile.h"
#include "radix/api/visit.h"
#include "radix/io/weight_store.h"
#include "radix/runtime/platform.h"

namespace radix {

struct LoadOptions {
  // Model path -> store name; empty = the same name.
  std::function<std::string(const std::string& path)> name_map;
  // Print "weights: N tensors, X MiB from FILE in T ms" (and progress on
  // long loads) to standard error.
  bool progress = false;
};

struct LoadStats {
  size_t tensors = 0;
  uint64_t bytes = 0;  // bytes read from the store
  double ms = 0;
};

// The untyped core: one Buffer per (path, shape), in order.
Result<std::vector<Buffer>> load_tensors(const Platform& platform,
                                         const std::vector<std::pair<std::string, Shape>>& wanted,
                                         const io::WeightStore& store, const LoadOptions& options = {},
                                         LoadStats* stats = nullptr);

// Fills every Shape leaf of `shapes` (a model structure over Shape, e.g.
// Llama<Shape>) from `store`: the same structure over Buffer.
template <class Model>
Result<Bufferized<Model>> load_weights(const Platform& platform, const Model& shapes, const io::WeightStore& store,
                                       const LoadOptions& options = {}, LoadStats* stats = nullptr) {
  std::vector<std::pair<std::string, Shape>> wanted;
  for_each_leaf<Shape>(shapes, [&](const std::string& path, const Shape& s) { wanted.emplace_back(path, s); });
  RADIX_ASSIGN_OR_RETURN(std::vector<Buffer> buffers, load_tensors(platform, wanted, store, options, stats));
  size_t next = 0;
  return map_leaves<Buffer>(shapes, [&](const std::string&, const Shape&) { return std::move(buffers[next++]); });
}

// The seeds' compile(platform, Model, init_args, &Model::forward, arg shapes,
// store): from a weight file to a runnable executable in one call.
//
// `model` is the model after its init: plain members (hyper-parameters) set
// and vectors sized (e.g. `layers` holds n_layers entries). Each Tensor leaf
// is either left default-constructed — its shape is then taken from the
// store tensor of the same name — or a placeholder whose shape the store
// tensor must match. The weights are loaded (LoadOptions: name_map,
// progress), `method` is traced over the model and compiled, and the weights
// are bound: the result is the ExeWithWeights that compile_model(...) then
// prepare(weights) would give. Every missing or mis-shaped tensor is listed
// in one error.
template <class Model, class Method, class... Specs>
auto compile_from_store(const Platform& platform, const io::WeightStore& store, Model model, Method method,
                        const CompileFnOptions& opts, const LoadOptions& load, const Specs&... specs) {
  using ExeT = std::remove_cvref_t<decltype(*compile_model(platform, opts, model, method, specs...))>;
  using Prepared = typename ExeT::Prepared;
  std::vector<std::pair<std::string, Shape>> wanted;
  for_each_leaf<Tensor>(model, [&](const std::string& path, Tensor& t) {
    const bool unset = t.is_placeholder() && t.shape() == Shape();
    const io::TensorInfo* info = store.find(load.name_map ? load.name_map(path) : path);
    wanted.emplace_back(path, unset && info ? info->shape : t.shape());
  });
  auto buffers = load_tensors(platform, wanted, store, load);
  if (!buffers.ok()) return Result<Prepared>(buffers.status());
  size_t i = 0;
  for_each_leaf<Tensor>(model, [&](const std::string&, Tensor& t) { t = Tensor::placeholder(wanted[i++].second); });
  i = 0;
  auto weights = map_leaves<Buffer>(model, [&](const std::string&, const Tensor&) { return std::move((*buffers)[i++]); });
  auto exe = compile_model(platform, opts, model, method, specs...);
  if (!exe.ok()) return Result<Prepared>(exe.status());
  return exe->prepare(std::move(weights));
}

}  // namespace radix
