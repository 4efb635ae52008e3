// Running one of the CPU backend's passes on MLIR written by hand (tests of
// backend internals: they link MLIR themselves).
#pragma once

#include <memory>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

namespace radix::testing {

// `source` parsed, `pass` run on it (after `options`, in the pass's
// textual form, if any), the module printed; or "parse failed", "bad option",
// "pass failed".
inline std::string run_pass(const std::string& source, std::unique_ptr<mlir::Pass> pass,
                            const std::string& options = "") {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  if (!module) return "parse failed";
  if (!options.empty() &&
      mlir::failed(pass->initializeOptions(options, [](const llvm::Twine&) { return mlir::failure(); })))
    return "bad option";
  mlir::PassManager pm(&ctx);
  pm.addPass(std::move(pass));
  if (mlir::failed(pm.run(*module))) return "pass failed";
  std::string out;
  llvm::raw_string_ostream os(out);
  module->print(os);
  return out;
}

}  // namespace radix::testing
