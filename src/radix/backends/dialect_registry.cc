#include "radix/backends/dialect_registry.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "radix/trace/sharding_emitter.h"

namespace radix {

const mlir::DialectRegistry& backend_dialect_registry() {
  static mlir::DialectRegistry* registry = [] {
    auto* r = new mlir::DialectRegistry();
    mlir::registerAllDialects(*r);
    mlir::registerAllExtensions(*r);
    detail::register_sharding_models(*r);
    mlir::registerAllToLLVMIRTranslations(*r);
    return r;
  }();
  return *registry;
}

}  // namespace radix
