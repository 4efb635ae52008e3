// NativeExecutable: what the CPU and CUDA executables share — a native
// object (the bytes the executable cache stores) loaded into the JIT, its
// packed @main entry, the memref-descriptor layout of its signature, and
// its custom-call sites, which go with the code (their handlers' state is
// destroyed with the executable).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "radix/backends/cpu/object_jit.h"
#include "radix/backends/memref_descriptors.h"
#include "radix/runtime/backend.h"
#include "radix/runtime/ffi_registry.h"
#include "radix/runtime/ffi_site.h"

namespace radix {

class NativeExecutable : public BackendExecutable {
 public:
  NativeExecutable(std::string object, std::unique_ptr<LoadedObject> loaded, void (*entry)(void**),
                   const Signature& sig)
      : object_(std::move(object)), loaded_(std::move(loaded)), entry_(entry), layout_(sig),
        ffi_sites_(loaded_->symbols_with_prefix(ffi::detail::kSiteSymbolPrefix)) {}
  ~NativeExecutable() override {
    if (!ffi_sites_.empty()) ffi::detail::forget_sites(ffi_sites_);
  }
  std::string serialize() const override { return object_; }

 protected:
  std::string object_;
  std::unique_ptr<LoadedObject> loaded_;
  void (*entry_)(void**);
  DescriptorLayout layout_;
  std::vector<const void*> ffi_sites_;
};

}  // namespace radix
