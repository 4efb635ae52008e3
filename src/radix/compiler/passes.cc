#include "radix/compiler/passes.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace radix {

void register_radix_passes() {
  static const bool done = [] {
    mlir::registerPass(create_results_to_destinations_pass);
    mlir::registerPass(create_untie_shared_inits_pass);
    return true;
  }();
  (void)done;
}

}  // namespace radix
