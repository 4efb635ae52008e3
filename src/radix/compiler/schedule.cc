#include "radix/compiler/schedule.h"

#include <sstream>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

namespace radix {

namespace {
constexpr const char* kMark = "radix.sid";

int64_t largest_divisor(int64_t n, std::initializer_list<int64_t> candidates) {
  for (int64_t c : candidates)
    if (n % c == 0) return c;
  return 1;
}

bool all_static(mlir::linalg::LinalgOp op) {
  for (mlir::Value v : op->getOperands())
    if (auto st = llvm::dyn_cast<mlir::ShapedType>(v.getType()))
      if (!st.hasStaticShape()) return false;
  return true;
}

std::string tile_list(const std::vector<int64_t>& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.size(); ++i) s += (i ? ", " : "") + std::to_string(t[i]);
  return s + "]";
}

// Emits `tile_using_for` with `n_loops` loop results and returns the new op handle.
void emit_tile(std::ostringstream& os, const std::string& in, const std::string& out,
               const std::vector<int64_t>& sizes) {
  int loops = 0;
  for (int64_t s : sizes) loops += s != 0;
  os << "    %" << out;
  for (int i = 0; i < loops; ++i) os << ", %" << out << "_l" << i;
  os << " = transform.structured.tile_using_for %" << in << " tile_sizes " << tile_list(sizes)
     << " : (!transform.any_op) -> (!transform.any_op";
  for (int i = 0; i < loops; ++i) os << ", !transform.any_op";
  os << ")\n";
}
}  // namespace

std::string build_cpu_schedule(mlir::ModuleOp module, ScheduleSummary* summary) {
  ScheduleSummary sum;
  std::ostringstream body;
  int sid = 0;
  mlir::OpBuilder b(module.getContext());
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!fn) return "";

  fn.walk([&](mlir::linalg::LinalgOp op) {
    if (!all_static(op) || op.getNumLoops() == 0) {
      ++sum.skipped;
      return;
    }
    const std::string id = "op" + std::to_string(sid);
    const std::string opname = op->getName().getStringRef().str();
    auto match = [&] {
      op->setAttr(kMark, b.getI64IntegerAttr(sid));
      body << "    %" << id << " = transform.structured.match ops{[\"" << opname << "\"]} attributes{" << kMark
           << " = " << sid << " : i64} in %root : (!transform.any_op) -> !transform.any_op\n";
      ++sid;
    };
    llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();

    if (auto mm = llvm::dyn_cast<mlir::linalg::MatmulOp>(op.getOperation())) {
      mlir::Type et = llvm::cast<mlir::ShapedType>(mm->getResult(0).getType()).getElementType();
      if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et) || mm.hasUserDefinedMaps()) {
        ++sum.skipped;
        return;
      }
      const int64_t M = ranges[0], N = ranges[1], K = ranges[2];
      const int64_t tm = largest_divisor(M, {8, 4, 2, 1});
      const int64_t tn = largest_divisor(N, {32, 16, 8, 4});
      if (N % tn != 0 || tn < 4) {
        ++sum.skipped;
        return;
      }
      match();
      std::string cur = id;
      if (M % 64 == 0 && N % 256 == 0 && K % 256 == 0 && M * N * K >= (int64_t{1} << 24)) {
        emit_tile(body, cur, id + "b", {64, 256, 0});
        emit_tile(body, id + "b", id + "k", {0, 0, 256});
        cur = id + "k";
      }
      emit_tile(body, cur, id + "r", {tm, tn, 0});
      emit_tile(body, id + "r", id + "s", {0, 0, 1});
      body << "    transform.structured.vectorize %" << id << "s {create_named_contraction} : !transform.any_op\n";
      ++sum.matmuls;
      return;
    }

    const bool elementwise = op.getNumReductionLoops() == 0 &&
                             (llvm::isa<mlir::linalg::GenericOp, mlir::linalg::FillOp>(op.getOperation()));
    if (elementwise) {
      const int64_t inner = ranges.back();
      const int64_t v = largest_divisor(inner, {16, 8, 4});
      if (inner % v != 0 || v < 4) {
        ++sum.skipped;
        return;
      }
      match();
      std::vector<int64_t> sizes(ranges.size(), 1);
      sizes.back() = v;
      emit_tile(body, id, id + "t", sizes);
      body << "    transform.structured.vectorize %" << id << "t : !transform.any_op\n";
      ++sum.elementwise;
      return;
    }
    ++sum.skipped;
  });
  if (summary) *summary = sum;
  if (sid == 0) return "";

  std::ostringstream os;
  os << "module attributes {transform.with_named_sequence} {\n"
        "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n"
     << body.str()
     << "    %fn = transform.structured.match ops{[\"func.func\"]} in %root : (!transform.any_op) -> !transform.any_op\n"
        "    transform.apply_patterns to %fn {\n"
        "      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
        "      transform.apply_patterns.vector.cast_away_vector_leading_one_dim\n"
        "      transform.apply_patterns.canonicalization\n"
        "    } : !transform.any_op\n"
        "    %loops = transform.structured.match ops{[\"scf.for\"]} in %fn : (!transform.any_op) -> !transform.any_op\n"
        "    transform.foreach %loops : !transform.any_op {\n"
        "    ^bb0(%l: !transform.any_op):\n"
        "      transform.loop.hoist_loop_invariant_subsets %l : !transform.any_op\n"
        "    }\n"
        "    transform.apply_patterns to %fn {\n"
        "      transform.apply_patterns.vector.lower_contraction lowering_strategy = \"outerproduct\"\n"
        "      transform.apply_patterns.vector.lower_outerproduct\n"
        "      transform.apply_patterns.vector.transfer_permutation_patterns\n"
        "      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = \"innerparallel\"\n"
        "      transform.apply_patterns.canonicalization\n"
        "    } : !transform.any_op\n"
        "    transform.yield\n"
        "  }\n"
        "}\n";
  return os.str();
}

Status apply_schedule(mlir::ModuleOp module, const std::string& script) {
  mlir::MLIRContext* ctx = module.getContext();
  std::string diag;
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic& d) {
    llvm::raw_string_ostream os(diag);
    os << d << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> lib = mlir::parseSourceString<mlir::ModuleOp>(script, ctx);
  if (!lib) return compile_error("schedule: the generated transform script does not parse:\n" + diag);
  mlir::Operation* entry = mlir::transform::detail::findTransformEntryPoint(module, *lib, "__transform_main");
  if (!entry) return compile_error("schedule: no @__transform_main in the transform script");
  if (mlir::failed(mlir::transform::applyTransformNamedSequence(module, entry, *lib,
                                                                mlir::transform::TransformOptions())))
    return compile_error("schedule: applying the transform script failed:\n" + diag);
  module.walk([](mlir::Operation* op) { op->removeAttr(kMark); });
  return Status();
}

}  // namespace radix
