// Memref descriptors for calling a compiled @main through its C interface
// (_mlir_ciface_main, packed): shared by the backends whose host code is
// native (CPU, and the host half of CUDA programs).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "llvm/ADT/SmallVector.h"
#include "radix/trace/traced_module.h"

namespace radix {

// Memref descriptors for the C interface: {allocated, aligned, offset,
// sizes[rank], strides[rank]}, all 8-byte fields. The sizes and strides of a
// signature never change, so they are laid out once; a call copies that
// layout to the stack and fills in the pointers.
struct DescriptorLayout {
  std::vector<int64_t> words;     // every descriptor, back to back
  std::vector<size_t> offsets;    // where each starts
  std::vector<int> slot;          // >= 0: input index; < 0: output -(index + 1)

  void add(const Shape& s, int slot_id) {
    offsets.push_back(words.size());
    slot.push_back(slot_id);
    const size_t at = words.size();
    words.resize(at + 3 + 2 * static_cast<size_t>(s.rank()), 0);
    int64_t stride = 1;
    for (int i = s.rank() - 1; i >= 0; --i) {
      words[at + 3 + static_cast<size_t>(i)] = s.dim(i);
      words[at + 3 + static_cast<size_t>(s.rank() + i)] = stride;
      stride *= s.dim(i);
    }
  }
  explicit DescriptorLayout(const Signature& sig) {
    for (size_t i = 0; i < sig.inputs.size(); ++i) add(sig.inputs[i], static_cast<int>(i));
    // A donated output is its input's memory, already passed: @main has no
    // destination argument for it (see radix-results-to-destinations).
    for (size_t o = 0; o < sig.outputs.size(); ++o)
      if (sig.output_donations[o] < 0) add(sig.outputs[o], -static_cast<int>(o) - 1);
  }
};

// Fills the descriptors for one call and runs `entry` (the packed entry of
// @main) through invoke(entry, args): `inputs` in signature order,
// `outputs` for the results that are not donated. On the stack for the
// usual sizes (re-entrant, no allocation).
template <class Invoke>
void call_packed(const DescriptorLayout& layout, void (*entry)(void**), std::span<void* const> inputs,
                 std::span<void* const> outputs, Invoke&& invoke) {
  const size_t n = layout.offsets.size();
  llvm::SmallVector<int64_t, 1024> words(layout.words.begin(), layout.words.end());
  llvm::SmallVector<void*, 128> desc_ptrs(n), args(n);
  for (size_t d = 0; d < n; ++d) {
    const int slot = layout.slot[d];
    auto p = reinterpret_cast<int64_t>(slot >= 0 ? inputs[static_cast<size_t>(slot)]
                                                 : outputs[static_cast<size_t>(-slot - 1)]);
    int64_t* w = words.data() + layout.offsets[d];
    w[0] = p;  // allocated
    w[1] = p;  // aligned
    // Packed calling convention: args[d] points at the d-th argument of
    // _mlir_ciface_main, itself a pointer to a descriptor.
    desc_ptrs[d] = w;
    args[d] = &desc_ptrs[d];
  }
  invoke(entry, args.data());
}
inline void call_packed(const DescriptorLayout& layout, void (*entry)(void**), std::span<void* const> inputs,
                        std::span<void* const> outputs) {
  call_packed(layout, entry, inputs, outputs, [](void (*e)(void**), void** args) { e(args); });
}

}  // namespace radix
