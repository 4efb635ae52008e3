#include "radix/compiler/passes.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace radix {

void register_radix_passes() {
  static const bool done = [] {
    mlir::registerPass(create_results_to_destinations_pass);
    mlir::registerPass(create_untie_shared_inits_pass);
    mlir::registerPass(create_math_approximation_pass);
    mlir::registerPass(create_materialize_reduction_indices_pass);
    mlir::registerPass(create_strided_copies_to_loops_pass);
    return true;
  }();
  (void)done;
}

}  // namespace radix
