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

}  // namespace radix
