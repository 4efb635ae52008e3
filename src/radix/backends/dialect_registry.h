// The MLIR registry the backends parse traced modules into: every upstream
// dialect and interface extension, Radix's sharding models, and the LLVM IR
// translations (the CPU's and the GPU's: NVVM, gpu.binary offloading).
// Built once; read-only after, so every backend's contexts may share it.
#pragma once

namespace mlir { class DialectRegistry; }

namespace radix {

const mlir::DialectRegistry& backend_dialect_registry();

}  // namespace radix
