// The core of api/control_flow.h: traces C++ bodies into scf.while / scf.if /
// scf.for regions. A region's block becomes the context's current block while
// its body runs, so every op the body calls is emitted inside the region.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "radix/api/control_flow.h"
#include "radix/trace/emit_util.h"

namespace radix::detail {

namespace {

std::string shapes_str(std::span<const Tensor> ts) {
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].shape().to_string();
  return s + ")";
}

// Traces fn inside `block` with its arguments as the state; restores the
// insertion point whatever happens. A TraceError from the body is rethrown
// naming `what`.
template <class Fn>
auto trace_in_block(CompilationContext& ctx, mlir::Block* block, const char* what, Fn&& fn) {
  ctx.push_block(block);
  try {
    auto r = fn();
    ctx.pop_block(block);
    return r;
  } catch (const TraceError& e) {
    ctx.pop_block(block);
    throw TraceError(std::string(what) + ": " + e.what());
  }
}

std::vector<Tensor> block_state(CompilationContext& ctx, mlir::Block* block, std::span<const Tensor> like,
                                unsigned first = 0) {
  std::vector<Shape> shapes;
  for (const Tensor& t : like) shapes.push_back(t.shape());
  return wrap_block_arguments(ctx, block, shapes, first);
}

// The body's new state must match the old one, tensor by tensor.
// (Thrown inside trace_in_block, which prefixes the body's name.)
void check_state(const char* expected, std::span<const Tensor> old_state, std::span<const Tensor> new_state) {
  bool ok = old_state.size() == new_state.size();
  for (size_t i = 0; ok && i < old_state.size(); ++i)
    ok = old_state[i].dtype() == new_state[i].dtype() && old_state[i].shape().same_dims(new_state[i].shape());
  if (!ok)
    fail("returns " + shapes_str(new_state) + " unlike " + expected + " " + shapes_str(old_state) +
         " (the same count, dtypes and dims are needed)");
}

// Ends a body's block with its new state: every tensor traced here, and (if
// `expected` is given) matching it, named by `against` in the error. (Thrown
// inside trace_in_block, which prefixes the body's name.)
void yield_state(CompilationContext& ctx, const std::vector<Tensor>& next,
                 std::span<const Tensor> expected = {}, const char* against = nullptr) {
  require_traced_here(ctx, "", next);
  if (against) check_state(against, expected, next);
  mlir::scf::YieldOp::create(ctx.builder(), ctx.loc(), values_of(next));
}

// Erases a control-flow op whose body failed; the trace goes on after it.
void discard(CompilationContext& ctx, mlir::Operation* op) {
  op->erase();
  ctx.builder().setInsertionPointToEnd(ctx.current_block());
}

mlir::Value predicate_value(CompilationContext& ctx, const char* what, const Tensor& p) {
  context_for(what, {&p});
  if (!is_bool(p.dtype()) || p.rank() != 0)
    fail(std::string(what) + " must be a rank-0 bool tensor, got " + p.shape().to_string());
  return mlir::tensor::ExtractOp::create(ctx.builder(), ctx.loc(), value_of(p), mlir::ValueRange{});
}

// Results take the init's shapes (tags included).
std::vector<Tensor> results_of(CompilationContext& ctx, mlir::Operation* op, std::span<const Tensor> like) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < like.size(); ++i) out.push_back(wrap(ctx, op->getResult(static_cast<unsigned>(i)), like[i].shape()));
  return out;
}

CompilationContext& context_of_state(const char* op, std::span<const Tensor> state) {
  CompilationContext& ctx = CompilationContext::require_current(op);
  for (const Tensor& t : state) context_for(op, {&t});
  return ctx;
}

}  // namespace

std::vector<Tensor> while_loop_flat(const FlatPred& cond, const FlatBody& body, const std::vector<Tensor>& init) {
  CompilationContext& ctx = context_of_state("while_loop", init);
  mlir::OpBuilder& b = ctx.builder();
  mlir::Location l = ctx.loc();
  llvm::SmallVector<mlir::Value> inits = values_of(init);
  llvm::SmallVector<mlir::Type> types;
  for (mlir::Value v : inits) types.push_back(v.getType());
  llvm::SmallVector<mlir::Location> locs(types.size(), l);
  auto loop = mlir::scf::WhileOp::create(b, l, types, inits);
  mlir::Block* before = b.createBlock(&loop.getBefore(), {}, types, locs);
  mlir::Block* after = b.createBlock(&loop.getAfter(), {}, types, locs);
  b.setInsertionPointAfter(loop);
  try {
    trace_in_block(ctx, before, "while_loop cond", [&] {
      std::vector<Tensor> s = block_state(ctx, before, init);
      mlir::Value c = predicate_value(ctx, "the condition", cond(s));
      mlir::scf::ConditionOp::create(b, l, c, values_of(s));
      return 0;
    });
    trace_in_block(ctx, after, "while_loop body", [&] {
      std::vector<Tensor> s = block_state(ctx, after, init);
      yield_state(ctx, body(s), init, "the state it takes");
      return 0;
    });
  } catch (...) {
    discard(ctx, loop);
    throw;
  }
  return results_of(ctx, loop, init);
}

std::vector<Tensor> cond_flat(const Tensor& pred, const FlatBody& then_fn, const FlatBody& else_fn,
                              const std::vector<Tensor>& operands) {
  CompilationContext& ctx = context_of_state("cond", operands);
  mlir::Value p = predicate_value(ctx, "cond: the predicate", pred);
  mlir::OpBuilder& b = ctx.builder();
  mlir::Location l = ctx.loc();
  // Branch results decide the op's types: trace `then` into a scratch block
  // first, then build the scf.if around both bodies.
  auto op = mlir::scf::IfOp::create(b, l, mlir::TypeRange{}, p, /*withElseRegion=*/true);
  mlir::Block* then_block = &op.getThenRegion().front();
  mlir::Block* else_block = &op.getElseRegion().front();
  then_block->clear();
  else_block->clear();
  b.setInsertionPointAfter(op);
  std::vector<Tensor> then_out, else_out;
  try {
    then_out = trace_in_block(ctx, then_block, "cond then-branch", [&] {
      std::vector<Tensor> r = then_fn(operands);
      yield_state(ctx, r);
      return r;
    });
    else_out = trace_in_block(ctx, else_block, "cond else-branch", [&] {
      std::vector<Tensor> r = else_fn(operands);
      yield_state(ctx, r, then_out, "the then-branch's");
      return r;
    });
  } catch (...) {
    discard(ctx, op);
    throw;
  }
  // Rebuild with the result types now known, moving both regions over.
  llvm::SmallVector<mlir::Type> types;
  for (const Tensor& t : then_out) types.push_back(value_of(t).getType());
  b.setInsertionPoint(op);
  auto typed = mlir::scf::IfOp::create(b, l, types, p, /*withElseRegion=*/true);
  typed.getThenRegion().takeBody(op.getThenRegion());
  typed.getElseRegion().takeBody(op.getElseRegion());
  op.erase();
  b.setInsertionPointAfter(typed);
  return results_of(ctx, typed, then_out);
}

std::vector<Tensor> for_loop_flat(int64_t begin, int64_t end, const FlatForBody& body, const std::vector<Tensor>& init) {
  CompilationContext& ctx = context_of_state("for_loop", init);
  mlir::OpBuilder& b = ctx.builder();
  mlir::Location l = ctx.loc();
  if (end < begin) end = begin;  // an empty range runs no step
  mlir::Value lb = mlir::arith::ConstantIndexOp::create(b, l, begin), ub = mlir::arith::ConstantIndexOp::create(b, l, end);
  mlir::Value one = mlir::arith::ConstantIndexOp::create(b, l, 1);
  auto loop = mlir::scf::ForOp::create(b, l, lb, ub, one, values_of(init));
  mlir::Block* blk = loop.getBody();
  blk->clear();  // drop the default terminator, if any: the body's yield is added below
  b.setInsertionPointAfter(loop);
  try {
    trace_in_block(ctx, blk, "for_loop body", [&] {
      mlir::Value i64 = mlir::arith::IndexCastOp::create(b, l, b.getI64Type(), loop.getInductionVar());
      mlir::Value t = mlir::tensor::FromElementsOp::create(b, l, mlir::RankedTensorType::get({}, b.getI64Type()),
                                                           mlir::ValueRange{i64});
      Tensor i = wrap(ctx, t, Shape(DType::kI64));
      std::vector<Tensor> s = block_state(ctx, blk, init, /*first=*/1);
      yield_state(ctx, body(i, s), init, "the state it takes");
      return 0;
    });
  } catch (...) {
    discard(ctx, loop);
    throw;
  }
  return results_of(ctx, loop, init);
}

}  // namespace radix::detail
