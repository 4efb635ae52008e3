// Internal: collects the MLIR diagnostics emitted in a context while alive,
// so failures (verifier, pass pipelines, transform scripts) can be returned
// as a Status with MLIR's own explanation instead of printed to stderr.
#pragma once

#include <string>

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

namespace radix::detail {

class DiagnosticCollector {
 public:
  explicit DiagnosticCollector(mlir::MLIRContext* ctx)
      : handler_(ctx, [this](mlir::Diagnostic& d) {
          llvm::raw_string_ostream os(text_);
          os << d << "\n";
          for (auto& note : d.getNotes()) os << "  note: " << note << "\n";
          return mlir::success();
        }) {}
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

}  // namespace radix::detail
