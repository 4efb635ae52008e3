// Traces functions over rank-0 tensors as scalar ops (scalar_body.h).
#include "radix/trace/scalar_body.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace radix::detail {

using mlir::Value;
using mlir::ValueRange;

namespace {

// Each rank-0 linalg.generic / linalg.fill among `ops` becomes its body's
// scalar ops wrapped by tensor.from_elements; the clean-up canonicalization
// folds the tensor.extract / tensor.from_elements pairs away.
void scalarize(mlir::OpBuilder& b, const std::vector<mlir::Operation*>& ops) {
  auto rank0 = [](mlir::Operation* op) {
    for (Value v : op->getOperands())
      if (auto t = llvm::dyn_cast<mlir::RankedTensorType>(v.getType()); t && t.getRank() != 0) return false;
    for (Value v : op->getResults())
      if (auto t = llvm::dyn_cast<mlir::RankedTensorType>(v.getType()); !t || t.getRank() != 0) return false;
    return true;
  };
  for (mlir::Operation* op : ops) {
    if (!rank0(op)) continue;
    mlir::Location l = op->getLoc();
    if (auto fill = llvm::dyn_cast<mlir::linalg::FillOp>(op)) {
      b.setInsertionPoint(fill);
      Value t = mlir::tensor::FromElementsOp::create(b, l, fill.getResult(0).getType(), ValueRange{fill.value()});
      fill.getResult(0).replaceAllUsesWith(t);
      fill.erase();
    } else if (auto g = llvm::dyn_cast<mlir::linalg::GenericOp>(op)) {
      b.setInsertionPoint(g);
      mlir::IRMapping map;
      mlir::Block& body = g.getRegion().front();
      for (unsigned i = 0; i < g->getNumOperands(); ++i) {
        mlir::BlockArgument arg = body.getArgument(i);
        if (arg.use_empty()) continue;
        map.map(arg, mlir::tensor::ExtractOp::create(b, l, g->getOperand(i), ValueRange{}).getResult());
      }
      for (mlir::Operation& inner : body.without_terminator()) b.clone(inner, map);
      auto yield = llvm::cast<mlir::linalg::YieldOp>(body.getTerminator());
      for (unsigned r = 0; r < g->getNumResults(); ++r) {
        Value s = map.lookupOrDefault(yield.getOperand(r));
        Value t = mlir::tensor::FromElementsOp::create(b, l, g->getResult(r).getType(), ValueRange{s});
        g->getResult(r).replaceAllUsesWith(t);
      }
      g.erase();
    }
  }
}

}  // namespace

mlir::Value trace_scalar_fn(CompilationContext& ctx, const std::string& what, const std::vector<mlir::Value>& args,
                            const std::vector<DType>& dtypes, const std::function<void(const Shape&)>& check_result,
                            const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
  mlir::OpBuilder& bd = ctx.builder();
  mlir::Location l = ctx.loc();
  mlir::Block* block = bd.getInsertionBlock();
  mlir::Operation* last = block->empty() ? nullptr : &block->back();
  std::vector<Tensor> ts;
  for (size_t i = 0; i < args.size(); ++i) {
    auto t0 = mlir::RankedTensorType::get({}, element_type(&ctx.mlir_context(), dtypes[i]));
    ts.push_back(wrap(ctx, mlir::tensor::FromElementsOp::create(bd, l, t0, ValueRange{args[i]}), Shape(dtypes[i])));
  }
  Tensor r;
  {
    mlir::OpBuilder::InsertionGuard guard(bd);
    ctx.push_block(block);
    struct Pop {
      CompilationContext& c;
      mlir::Block* blk;
      ~Pop() { c.pop_block(blk); }
    } pop{ctx, block};
    try {
      r = fn(ts);
    } catch (const TraceError& e) {
      throw TraceError(what + ": in the body: " + e.what());
    }
  }
  if (r.is_placeholder() || r.trace_id() != ctx.trace_id())
    fail(what + ": the body must return a tensor traced from its arguments");
  check_result(r.shape());
  // Extract first: scalarize() replaces (and erases) the op defining r.
  bd.setInsertionPointToEnd(block);
  Value result = mlir::tensor::ExtractOp::create(bd, l, value_of(r), ValueRange{});
  std::vector<mlir::Operation*> emitted;
  for (auto it = last ? std::next(last->getIterator()) : block->begin(); it != block->end(); ++it)
    emitted.push_back(&*it);
  scalarize(bd, emitted);
  bd.setInsertionPointToEnd(block);
  return result;
}

mlir::Value trace_scalar_fn(CompilationContext& ctx, const std::string& what, const std::vector<mlir::Value>& args,
                            const std::vector<DType>& dtypes, DType result_dtype,
                            const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
  return trace_scalar_fn(ctx, what, args, dtypes, [&](const Shape& r) {
    if (r.rank() != 0 || r.dtype() != result_dtype)
      fail(what + ": the body must return a rank-0 " + std::string(dtype_name(result_dtype)) + " tensor, got " +
           r.to_string());
  }, fn);
}

}  // namespace radix::detail

