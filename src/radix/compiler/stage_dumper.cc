#include "radix/compiler/stage_dumper.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "mlir/IR/BuiltinOps.h"
#include "radix/core/status.h"

namespace radix {

bool StageDumper::wants(std::string_view stage) const {
  for (const auto& d : options_.dump)
    if (d == stage || d == "all") return true;
  return false;
}

void StageDumper::dump(std::string_view stage, std::string_view text, std::string_view ext) {
  if (!wants(stage)) return;
  ++counter_;
  if (folder_.empty()) {
    std::fprintf(stderr, "// ----- radix stage: %.*s -----\n%.*s\n", static_cast<int>(stage.size()), stage.data(),
                 static_cast<int>(text.size()), text.data());
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  char prefix[8];
  std::snprintf(prefix, sizeof(prefix), "%02d-", counter_);
  std::filesystem::path p =
      std::filesystem::path(folder_) / (std::string(prefix) + std::string(stage) + "." + std::string(ext));
  std::ofstream out(p);
  out << text;
  if (!out) std::fprintf(stderr, "radix: warning: cannot write dump %s\n", p.c_str());
}

void StageDumper::dump_file(std::string_view stage, std::string_view file_name, std::string_view text) {
  if (!wants(stage)) return;
  if (folder_.empty()) {
    std::fprintf(stderr, "// ----- radix stage: %.*s (%.*s) -----\n%.*s\n", static_cast<int>(stage.size()), stage.data(),
                 static_cast<int>(file_name.size()), file_name.data(), static_cast<int>(text.size()), text.data());
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  std::filesystem::path p = std::filesystem::path(folder_) / std::string(file_name);
  std::ofstream out(p);
  out << text;
  if (!out) std::fprintf(stderr, "radix: warning: cannot write dump %s\n", p.c_str());
}

void StageDumper::dump_module(std::string_view stage, mlir::ModuleOp module) {
  if (!wants(stage)) return;
  std::string s;
  llvm::raw_string_ostream os(s);
  module.print(os);
  dump(stage, s);
}

Status check_dump_stages(const DiagnosticOptions& options, const std::vector<std::string>& known) {
  for (const std::string& d : options.dump) {
    bool ok = d == "all";
    for (const std::string& k : known) ok = ok || d == k;
    if (ok) continue;
    std::string list;
    for (const std::string& k : known) list += k + ", ";
    return invalid_argument("CompileOptions.diagnostics.dump: unknown stage '" + d + "' (known: " + list + "all)");
  }
  return Status();
}

}  // namespace radix
