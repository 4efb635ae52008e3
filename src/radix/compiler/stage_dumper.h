// StageDumper: writes a compile's stages where DiagnosticOptions says —
// standard error, or one numbered file per stage in the compile's dump
// folder (see CompileOptions). Shared by every backend; the stage names are
// the backend's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "radix/compiler/compile_options.h"
#include "radix/core/status.h"

namespace mlir { class ModuleOp; }

namespace radix {

class StageDumper {
 public:
  // `folder`: this compile's dump folder, or "" for standard error.
  StageDumper(const DiagnosticOptions& options, std::string folder)
      : options_(options), folder_(std::move(folder)) {}
  bool wants(std::string_view stage) const;
  // Writes "<NN>-<stage>.<ext>" (or a banner + text on stderr) if wanted.
  void dump(std::string_view stage, std::string_view text, std::string_view ext = "mlir");
  void dump_module(std::string_view stage, mlir::ModuleOp module);
  // Writes `text` as <folder>/<file_name> (not numbered: a per-kernel file
  // such as "add_kernel.ptx"), or with a banner on stderr, if `stage` is wanted.
  void dump_file(std::string_view stage, std::string_view file_name, std::string_view text);
  const std::string& folder() const { return folder_; }

 private:
  const DiagnosticOptions& options_;
  std::string folder_;
  int counter_ = 0;
};

// Checks every name in options.dump against `known` (plus "all").
Status check_dump_stages(const DiagnosticOptions& options, const std::vector<std::string>& known);

}  // namespace radix
