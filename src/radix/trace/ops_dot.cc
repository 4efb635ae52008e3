// Contractions. Plain 2-D and batched 3-D matrix products become the named
// linalg.matmul / linalg.batch_matmul (the CPU backend's tuned schedules
// match those); every other contraction becomes a linalg.generic.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Value;

namespace {
std::string axes_str(const Axes& axes) {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + axes[i].to_string();
  return s + "}";
}

std::string dims_str(const DotDims& d) {
  return "batch " + axes_str(d.lhs_batch) + "/" + axes_str(d.rhs_batch) + ", contract " + axes_str(d.lhs_contract) +
         "/" + axes_str(d.rhs_contract);
}
}  // namespace

Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const DotDims& dd) {
  CompilationContext& ctx = context_for("dot_general", {&lhs, &rhs});
  auto err = [&](const std::string& why) {
    fail("dot_general(" + lhs.shape().to_string() + ", " + rhs.shape().to_string() + "; " + dims_str(dd) + "): " + why);
  };
  if (lhs.dtype() != rhs.dtype()) err("operands must share one dtype");
  if (is_bool(lhs.dtype())) err("not defined for bool tensors");
  if (dd.lhs_batch.size() != dd.rhs_batch.size()) err("batching axis lists differ in length");
  if (dd.lhs_contract.size() != dd.rhs_contract.size()) err("contracting axis lists differ in length");

  // role: -1 free, 0 batch k, 1 contract k
  struct Role { int kind = -1; int k = 0; };
  std::vector<Role> lrole(static_cast<size_t>(lhs.rank())), rrole(static_cast<size_t>(rhs.rank()));
  auto assign = [&](const Tensor& t, std::vector<Role>& roles, const Axes& axes, int kind, const char* side) {
    for (size_t k = 0; k < axes.size(); ++k) {
      auto a = t.shape().find_axis(axes[k]);
      if (!a) err(std::string(side) + " axis " + axes[k].to_string() + " does not exist");
      if (roles[static_cast<size_t>(*a)].kind != -1) err(std::string(side) + " axis " + axes[k].to_string() + " used twice");
      roles[static_cast<size_t>(*a)] = {kind, static_cast<int>(k)};
    }
  };
  assign(lhs, lrole, dd.lhs_batch, 0, "lhs");
  assign(lhs, lrole, dd.lhs_contract, 1, "lhs");
  assign(rhs, rrole, dd.rhs_batch, 0, "rhs");
  assign(rhs, rrole, dd.rhs_contract, 1, "rhs");

  const size_t nb = dd.lhs_batch.size(), nc = dd.lhs_contract.size();
  std::vector<int> lb(nb), rb(nb), lc(nc), rc(nc), lf, rf;
  for (int i = 0; i < lhs.rank(); ++i) {
    Role r = lrole[static_cast<size_t>(i)];
    if (r.kind == 0) lb[static_cast<size_t>(r.k)] = i;
    else if (r.kind == 1) lc[static_cast<size_t>(r.k)] = i;
    else lf.push_back(i);
  }
  for (int i = 0; i < rhs.rank(); ++i) {
    Role r = rrole[static_cast<size_t>(i)];
    if (r.kind == 0) rb[static_cast<size_t>(r.k)] = i;
    else if (r.kind == 1) rc[static_cast<size_t>(r.k)] = i;
    else rf.push_back(i);
  }
  for (size_t k = 0; k < nb; ++k)
    if (lhs.shape().dim(lb[k]) != rhs.shape().dim(rb[k]))
      err("batching axes " + dd.lhs_batch[k].to_string() + " and " + dd.rhs_batch[k].to_string() + " have sizes " +
          std::to_string(lhs.shape().dim(lb[k])) + " and " + std::to_string(rhs.shape().dim(rb[k])));
  for (size_t k = 0; k < nc; ++k)
    if (lhs.shape().dim(lc[k]) != rhs.shape().dim(rc[k]))
      err("contracting axes " + dd.lhs_contract[k].to_string() + " and " + dd.rhs_contract[k].to_string() +
          " have sizes " + std::to_string(lhs.shape().dim(lc[k])) + " and " + std::to_string(rhs.shape().dim(rc[k])));

  std::vector<int64_t> odims;
  std::vector<Tag> otags;
  for (int a : lb) { odims.push_back(lhs.shape().dim(a)); otags.push_back(lhs.shape().tag(a)); }
  for (int a : lf) { odims.push_back(lhs.shape().dim(a)); otags.push_back(lhs.shape().tag(a)); }
  for (int a : rf) { odims.push_back(rhs.shape().dim(a)); otags.push_back(rhs.shape().tag(a)); }
  if (odims.size() > static_cast<size_t>(kMaxRank)) err("the result would exceed rank 8");
  Shape out;
  try {
    out = Shape(lhs.dtype(), std::span<const int64_t>(odims), std::span<const Tag>(otags));
  } catch (const std::invalid_argument& e) {
    err(std::string("result axes clash: ") + e.what());
  }

  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();
  DType d = lhs.dtype();
  Value zero = scalar_constant(b, l, d, 0);
  Value acc = mlir::linalg::FillOp::create(b, l, mlir::ValueRange{zero}, mlir::ValueRange{empty_tensor(ctx, out)})
                  .getResult(0);
  auto out_t = tensor_type(mctx, out);
  Value A = value_of(lhs), B = value_of(rhs);

  // Named forms: [m,k]x[k,n] and [b,m,k]x[b,k,n].
  if (nb == 0 && nc == 1 && lhs.rank() == 2 && rhs.rank() == 2 && lc[0] == 1 && rc[0] == 0)
    return wrap(ctx, mlir::linalg::MatmulOp::create(b, l, mlir::TypeRange{out_t}, mlir::ValueRange{A, B},
                                                    mlir::ValueRange{acc}).getResult(0), out);
  if (nb == 1 && nc == 1 && lhs.rank() == 3 && rhs.rank() == 3 && lb[0] == 0 && rb[0] == 0 && lc[0] == 2 &&
      rc[0] == 1)
    return wrap(ctx, mlir::linalg::BatchMatmulOp::create(b, l, mlir::TypeRange{out_t}, mlir::ValueRange{A, B},
                                                         mlir::ValueRange{acc}).getResult(0), out);

  // Loops: [batch..., lhs free..., rhs free..., contract...].
  const unsigned n_loops = static_cast<unsigned>(nb + lf.size() + rf.size() + nc);
  auto dim = [&](size_t i) { return mlir::getAffineDimExpr(static_cast<unsigned>(i), mctx); };
  llvm::SmallVector<mlir::AffineExpr> le(static_cast<size_t>(lhs.rank())), re(static_cast<size_t>(rhs.rank())), oe;
  for (size_t k = 0; k < nb; ++k) { le[static_cast<size_t>(lb[k])] = dim(k); re[static_cast<size_t>(rb[k])] = dim(k); }
  for (size_t j = 0; j < lf.size(); ++j) le[static_cast<size_t>(lf[j])] = dim(nb + j);
  for (size_t j = 0; j < rf.size(); ++j) re[static_cast<size_t>(rf[j])] = dim(nb + lf.size() + j);
  for (size_t k = 0; k < nc; ++k) {
    size_t loop = nb + lf.size() + rf.size() + k;
    le[static_cast<size_t>(lc[k])] = dim(loop);
    re[static_cast<size_t>(rc[k])] = dim(loop);
  }
  for (size_t i = 0; i < nb + lf.size() + rf.size(); ++i) oe.push_back(dim(i));
  llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::get(n_loops, 0, le, mctx),
                                             mlir::AffineMap::get(n_loops, 0, re, mctx),
                                             mlir::AffineMap::get(n_loops, 0, oe, mctx)};
  llvm::SmallVector<mlir::utils::IteratorType> iters(n_loops - nc, mlir::utils::IteratorType::parallel);
  iters.append(nc, mlir::utils::IteratorType::reduction);
  auto g = mlir::linalg::GenericOp::create(
      b, l, mlir::TypeRange{out_t}, mlir::ValueRange{A, B}, mlir::ValueRange{acc}, maps, iters,
      [&](mlir::OpBuilder& nb2, mlir::Location nl, mlir::ValueRange v) {
        Value r;
        if (is_float(d)) r = mlir::arith::AddFOp::create(nb2, nl, v[2], mlir::arith::MulFOp::create(nb2, nl, v[0], v[1]));
        else r = mlir::arith::AddIOp::create(nb2, nl, v[2], mlir::arith::MulIOp::create(nb2, nl, v[0], v[1]));
        mlir::linalg::YieldOp::create(nb2, nl, r);
      });
  return wrap(ctx, g.getResult(0), out);
}

Tensor dot(const Tensor& lhs, const Tensor& rhs, std::initializer_list<Tag> contract) {
  context_for("dot", {&lhs, &rhs});
  DotDims dd;
  for (Tag t : contract) {
    if (!lhs.shape().find_axis(Axis(t)) || !rhs.shape().find_axis(Axis(t)))
      fail("dot(" + lhs.shape().to_string() + ", " + rhs.shape().to_string() + "): contracting tag '" +
           std::string(t.name()) + "' must be on both operands");
    dd.lhs_contract.push_back(t);
    dd.rhs_contract.push_back(t);
  }
  for (int i = 0; i < lhs.rank(); ++i) {
    Tag t = lhs.shape().tag(i);
    if (t.empty()) continue;
    bool contracted = false;
    for (Tag c : contract) contracted |= c == t;
    if (!contracted && rhs.shape().find_axis(Axis(t))) {
      dd.lhs_batch.push_back(t);
      dd.rhs_batch.push_back(t);
    }
  }
  return dot_general(lhs, rhs, dd);
}

Tensor dot(const Tensor& lhs, const Tensor& rhs, Tag contract) { return dot(lhs, rhs, {contract}); }

Tensor matmul(const Tensor& lhs, const Tensor& rhs) {
  context_for("matmul", {&lhs, &rhs});
  const int lr = lhs.rank(), rr = rhs.rank();
  if (lr == 0 || rr == 0)
    fail("matmul(" + lhs.shape().to_string() + ", " + rhs.shape().to_string() + "): operands must have rank >= 1");
  DotDims dd;
  if (lr == 1 || rr == 1) {
    dd.lhs_contract = {lr - 1};
    dd.rhs_contract = {rr == 1 ? 0 : rr - 2};
    return dot_general(lhs, rhs, dd);
  }
  if (lr != rr)
    fail("matmul(" + lhs.shape().to_string() + ", " + rhs.shape().to_string() +
         "): batched operands need the same rank (broadcast the batch axes first)");
  for (int i = 0; i < lr - 2; ++i) {
    dd.lhs_batch.push_back(i);
    dd.rhs_batch.push_back(i);
  }
  dd.lhs_contract = {lr - 1};
  dd.rhs_contract = {rr - 2};
  return dot_general(lhs, rhs, dd);
}

}  // namespace radix
