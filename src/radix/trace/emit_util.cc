#include "radix/trace/emit_util.h"

#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace radix::detail {

namespace {
std::string shapes_of(std::span<const Tensor* const> ops) {
  std::string s;
  for (size_t i = 0; i < ops.size(); ++i) s += (i ? ", " : "") + ops[i]->shape().to_string();
  return s;
}

bool fully_tagged(const Shape& s) {
  for (int i = 0; i < s.rank(); ++i)
    if (s.tag(i).empty()) return false;
  return true;
}
}  // namespace

Alignment align_shapes(const char* op, std::span<const Tensor* const> operands) {
  auto bad = [&](const std::string& why) -> void {
    fail(std::string(op) + ": cannot broadcast " + shapes_of(operands) + ": " + why);
  };
  bool by_tag = false;
  for (const Tensor* t : operands) {
    if (t->rank() == 0) continue;
    if (!fully_tagged(t->shape())) { by_tag = false; break; }
    by_tag = true;
  }

  Alignment al;
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  if (by_tag) {
    // The result takes the axis order of an operand whose tags include every
    // other operand's ([d] + [b, d] -> [b, d]); without one, the first
    // operand's axes come first, then each new tag in operand order.
    std::vector<const Tensor*> order(operands.begin(), operands.end());
    for (size_t k = 0; k < operands.size(); ++k) {
      const Shape& big = operands[k]->shape();
      bool covers = true;
      for (const Tensor* t : operands)
        for (int i = 0; i < t->rank() && covers; ++i) covers = big.find_axis(Axis(t->shape().tag(i))).has_value();
      if (covers) {
        std::stable_partition(order.begin(), order.end(), [&](const Tensor* t) { return t == operands[k]; });
        break;
      }
    }
    for (const Tensor* t : order) {
      for (int i = 0; i < t->rank(); ++i) {
        Tag tg = t->shape().tag(i);
        int64_t d = t->shape().dim(i);
        size_t j = 0;
        while (j < tags.size() && !(tags[j] == tg)) ++j;
        if (j == tags.size()) {
          tags.push_back(tg);
          dims.push_back(d);
        } else if (dims[j] != d) {
          if (dims[j] == 1) dims[j] = d;
          else if (d != 1)
            bad("axis '" + std::string(tg.name()) + "' has sizes " + std::to_string(dims[j]) + " and " +
                std::to_string(d));
        }
      }
    }
    if (tags.size() > static_cast<size_t>(kMaxRank)) bad("the result would exceed rank 8");
    for (const Tensor* t : operands) {
      std::vector<int> m;
      for (int i = 0; i < t->rank(); ++i)
        for (size_t j = 0; j < tags.size(); ++j)
          if (tags[j] == t->shape().tag(i)) m.push_back(static_cast<int>(j));
      al.axis_map.push_back(std::move(m));
    }
  } else {
    int rank = 0;
    for (const Tensor* t : operands) rank = std::max(rank, t->rank());
    dims.assign(static_cast<size_t>(rank), 1);
    tags.assign(static_cast<size_t>(rank), Tag());
    for (const Tensor* t : operands) {
      int off = rank - t->rank();
      std::vector<int> m;
      for (int i = 0; i < t->rank(); ++i) {
        size_t j = static_cast<size_t>(off + i);
        int64_t d = t->shape().dim(i);
        if (dims[j] != d) {
          if (dims[j] == 1) dims[j] = d;
          else if (d != 1)
            bad("axis " + std::to_string(j) + " (aligned from the right) has sizes " + std::to_string(dims[j]) +
                " and " + std::to_string(d));
        }
        Tag tg = t->shape().tag(i);
        if (!tg.empty()) {
          if (tags[j].empty()) tags[j] = tg;
          else if (!(tags[j] == tg))
            bad("axis " + std::to_string(j) + " is tagged both '" + std::string(tags[j].name()) + "' and '" +
                std::string(tg.name()) + "'");
        }
        m.push_back(static_cast<int>(j));
      }
      al.axis_map.push_back(std::move(m));
    }
  }
  try {
    al.result = Shape(operands[0]->dtype(), std::span<const int64_t>(dims), std::span<const Tag>(tags));
  } catch (const std::invalid_argument& e) {
    bad(e.what());
  }
  return al;
}

Tensor emit_map(CompilationContext& ctx, std::span<const Tensor* const> operands,
                const std::vector<std::vector<int>>& axis_map, const Shape& result, const ScalarFn& body) {
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location loc = ctx.loc();
  const int rank = result.rank();

  llvm::SmallVector<mlir::AffineMap> maps;
  llvm::SmallVector<mlir::Value> ins;
  for (size_t k = 0; k < operands.size(); ++k) {
    const Shape& s = operands[k]->shape();
    llvm::SmallVector<mlir::AffineExpr> exprs;
    for (int i = 0; i < s.rank(); ++i) {
      int j = axis_map[k][static_cast<size_t>(i)];
      if (s.dim(i) == 1 && result.dim(j) != 1) exprs.push_back(mlir::getAffineConstantExpr(0, mctx));
      else exprs.push_back(mlir::getAffineDimExpr(static_cast<unsigned>(j), mctx));
    }
    maps.push_back(mlir::AffineMap::get(static_cast<unsigned>(rank), 0, exprs, mctx));
    ins.push_back(value_of(*operands[k]));
  }
  maps.push_back(mlir::AffineMap::getMultiDimIdentityMap(static_cast<unsigned>(rank), mctx));
  llvm::SmallVector<mlir::utils::IteratorType> iters(static_cast<size_t>(rank), mlir::utils::IteratorType::parallel);
  mlir::Value init = empty_tensor(ctx, result);
  auto op = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{tensor_type(mctx, result)}, ins, mlir::ValueRange{init}, maps, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        mlir::Value v = body(nb, nl, args.drop_back());
        mlir::linalg::YieldOp::create(nb, nl, v);
      });
  return wrap(ctx, op.getResult(0), result);
}

Tensor emit_unary(const char* op, const Tensor& x, DType out, const ScalarFn& fn) {
  CompilationContext& ctx = context_for(op, {&x});
  const Tensor* ops[] = {&x};
  std::vector<std::vector<int>> m(1);
  for (int i = 0; i < x.rank(); ++i) m[0].push_back(i);
  return emit_map(ctx, ops, m, shape_for(op, {&x}, [&] { return x.shape().with_dtype(out); }), fn);
}

Tensor emit_binary(const char* op, const Tensor& a, const Tensor& b, DType out, const ScalarFn& fn) {
  CompilationContext& ctx = context_for(op, {&a, &b});
  const Tensor* ops[] = {&a, &b};
  Alignment al = align_shapes(op, ops);
  return emit_map(ctx, ops, al.axis_map, shape_for(op, {&a, &b}, [&] { return al.result.with_dtype(out); }), fn);
}

llvm::SmallVector<mlir::OpFoldResult> index_attrs(mlir::OpBuilder& b, llvm::ArrayRef<int64_t> v) {
  llvm::SmallVector<mlir::OpFoldResult> r;
  for (int64_t x : v) r.push_back(b.getIndexAttr(x));
  return r;
}

std::string axes_str(const std::vector<Axis>& axes) {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + axes[i].to_string();
  return s + "}";
}

mlir::TypedAttr scalar_attr(mlir::Builder& b, DType dtype, double value) {
  mlir::Type et = element_type(b.getContext(), dtype);
  if (is_float(dtype)) return b.getFloatAttr(et, value);
  if (is_bool(dtype)) return b.getIntegerAttr(et, value != 0 ? 1 : 0);
  const unsigned bits = static_cast<unsigned>(dtype_bits(dtype));
  llvm::APInt v = is_unsigned_int(dtype) ? llvm::APInt(bits, static_cast<uint64_t>(value), false)
                                         : llvm::APInt(bits, static_cast<uint64_t>(static_cast<int64_t>(value)), true);
  return b.getIntegerAttr(et, v);
}

mlir::Value scalar_constant(mlir::OpBuilder& b, mlir::Location loc, DType dtype, double value) {
  return mlir::arith::ConstantOp::create(b, loc, scalar_attr(b, dtype, value));
}

mlir::Value empty_tensor(CompilationContext& ctx, const Shape& shape) {
  llvm::SmallVector<int64_t> dims(shape.dims().begin(), shape.dims().end());
  return mlir::tensor::EmptyOp::create(ctx.builder(), ctx.loc(), dims,
                                       element_type(&ctx.mlir_context(), shape.dtype()));
}

void require_same_dtype(const char* op, std::initializer_list<const Tensor*> operands) {
  DType d = (*operands.begin())->dtype();
  for (const Tensor* t : operands)
    if (t->dtype() != d)
      fail(describe(op, operands) + ": operands must share one dtype (convert one of them first)");
}

void require_float(const char* op, const Tensor& x) {
  if (!is_float(x.dtype()))
    fail(describe(op, {&x}) + ": requires a floating-point dtype, got " + std::string(dtype_name(x.dtype())));
}

void require_int(const char* op, const Tensor& x, bool allow_bool) {
  const DType d = x.dtype();
  if (is_float(d) || (is_bool(d) && !allow_bool))
    fail(describe(op, {&x}) + ": requires an integer" + (allow_bool ? " or bool" : "") + " dtype, got " +
         std::string(dtype_name(d)));
}

}  // namespace radix::detail
