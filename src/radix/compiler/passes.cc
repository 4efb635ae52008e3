#include "radix/compiler/passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/trace/diagnostic_collector.h"

namespace radix {

void register_radix_passes() {
  static const bool done = [] {
    mlir::registerPass(create_results_to_destinations_pass);
    mlir::registerPass(create_untie_shared_inits_pass);
    return true;
  }();
  (void)done;
}

Status run_pass_pipeline(mlir::ModuleOp module, const std::string& what, const std::string& pipeline,
                         detail::DiagnosticCollector& diags) {
  mlir::PassManager pm = mlir::PassManager::on<mlir::ModuleOp>(module.getContext());
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, llvm::errs())))
    return compile_error(what + ": pass pipeline does not parse: " + pipeline);
  if (mlir::failed(pm.run(module))) return compile_error(what + " (" + pipeline + ") failed:\n" + diags.text());
  return Status();
}

std::string replace_all(std::string text, std::string_view key, std::string_view by) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + by.size()))
    text.replace(at, key.size(), by);
  return text;
}

}  // namespace radix
