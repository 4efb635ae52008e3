// Contractions. Every dot_general becomes transposes + reshapes around one
// named linalg.matmul or linalg.batch_matmul (with B read as [n, k] through
// its indexing map when the rhs is already laid out that way), which the CPU
// backend's schedule tiles and vectorizes.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Value;

namespace {
// See rhs_transposed in dot_general_as.
constexpr int64_t kDotProductMaxBatchedRows = 8;

std::string dims_str(const DotDims& d) {
  return "batch " + axes_str(d.lhs_batch) + "/" + axes_str(d.rhs_batch) + ", contract " + axes_str(d.lhs_contract) +
         "/" + axes_str(d.rhs_contract);
}

}  // namespace

namespace detail {
// dot_general under the name of the op the user called (dot, matmul,
// dot_general), so that errors name it.
Tensor dot_general_as(const char* op, const Tensor& lhs, const Tensor& rhs, const DotDims& dd) {
  CompilationContext& ctx = context_for(op, {&lhs, &rhs});
  auto err = [&](const std::string& why) {
    fail(std::string(op) + "(" + lhs.shape().to_string() + ", " + rhs.shape().to_string() + "; " + dims_str(dd) +
         "): " + why);
  };
  // One dtype, or f32 with a 16-bit float (f32 activations times bf16 / f16
  // weights): the 16-bit side is widened inside the product, never copied.
  const bool mixed = lhs.dtype() != rhs.dtype();
  if (mixed && !((lhs.dtype() == DType::kF32 && is_half_float(rhs.dtype())) ||
                 (rhs.dtype() == DType::kF32 && is_half_float(lhs.dtype()))))
    err("operands must share one dtype, or be f32 and a 16-bit float (bf16 / f16)");
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

  // Canonical form (as XLA's dot decomposition): lhs -> [batch, lhs free,
  // contract] -> [B, M, K], rhs -> [batch, contract, rhs free] -> [B, K, N],
  // one linalg.batch_matmul (linalg.matmul when there is no batch axis), then
  // [B, M, N] -> the result's dims. Transposes are skipped when the operand is
  // already in order, reshapes are views: every contraction reaches the
  // backend as one of the two named ops its schedule tiles and vectorizes.
  auto product = [](const Tensor& t, const std::vector<int>& axes) {
    int64_t p = 1;
    for (int a : axes) p *= t.shape().dim(a);
    return p;
  };
  const int64_t B = product(lhs, lb), M = product(lhs, lf), K = product(lhs, lc), N = product(rhs, rf);
  auto concat = [](std::initializer_list<const std::vector<int>*> parts) {
    Axes axes;
    for (const auto* p : parts)
      for (int a : *p) axes.push_back(a);
    return axes;
  };
  Tensor L = transpose(lhs, concat({&lb, &lf, &lc}));
  // A rhs already laid out [batch, free, contract] — the usual weight layout
  // w[out, in] of x · wᵀ, and k[t, d] of q · kᵀ — is read in place through
  // the op's indexing map (B(n, k)) instead of being transposed in memory on
  // every call: for a decode step that copy would cost more than the product.
  // Batched products with more than a few rows (attention's q · kᵀ over a
  // prompt) keep the transpose: K is short there (a head dim), so the
  // per-output horizontal sums of the dot-product schedule would outweigh
  // the products, while one transpose of k is cheap beside them.
  const Axes rhs_nk = concat({&rb, &rf, &rc});
  bool rhs_transposed = !rf.empty() && !rc.empty() && (nb == 0 || M <= kDotProductMaxBatchedRows);
  for (int i = 0; i < rhs.rank() && rhs_transposed; ++i) rhs_transposed = rhs_nk[static_cast<size_t>(i)].index() == i;
  Tensor R = rhs_transposed ? rhs : transpose(rhs, concat({&rb, &rc, &rf}));
  // 16-bit floats multiply and accumulate in f32 (rounded once at the end),
  // as XLA and cuBLAS do: summing K products in f16 loses most of the bits.
  // The named ops widen 16-bit inputs to the f32 accumulator in their body
  // (linalg's cast), so 16-bit operands stay 16-bit in memory: half the bytes
  // read, which is the point of bf16 weights in a memory-bound decode step.
  const DType acc_dtype = mixed || is_half_float(lhs.dtype()) ? DType::kF32 : lhs.dtype();
  const DType out_dtype = mixed ? DType::kF32 : lhs.dtype();
  const bool batched = nb > 0;
  L = batched ? reshape(L, {B, M, K}) : reshape(L, {M, K});
  if (rhs_transposed)
    R = batched ? reshape(R, {B, N, K}) : reshape(R, {N, K});
  else
    R = batched ? reshape(R, {B, K, N}) : reshape(R, {K, N});
  Shape mm_shape = batched ? Shape(acc_dtype, {B, M, N}) : Shape(acc_dtype, {M, N});

  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();
  Value zero = scalar_constant(b, l, acc_dtype, 0);
  Value acc = mlir::linalg::FillOp::create(b, l, mlir::ValueRange{zero}, mlir::ValueRange{empty_tensor(ctx, mm_shape)})
                  .getResult(0);
  auto mm_t = tensor_type(mctx, mm_shape);
  llvm::SmallVector<Value, 2> ins = {value_of(L), value_of(R)};  // ValueRange must not view a temporary
  // Transposed rhs: the named op with explicit maps, (b,) m, n, k -> A(b, m, k), B(b, n, k), C(b, m, n).
  llvm::SmallVector<mlir::NamedAttribute, 1> attrs;
  if (rhs_transposed) {
    const unsigned nd = batched ? 4 : 3;
    auto d = [&](unsigned i) { return mlir::getAffineDimExpr(i, mctx); };
    const unsigned o = batched ? 1 : 0;  // m, n, k are dims o, o + 1, o + 2
    auto map = [&](std::initializer_list<unsigned> dims) {
      llvm::SmallVector<mlir::AffineExpr, 3> exprs;
      if (batched) exprs.push_back(d(0));
      for (unsigned i : dims) exprs.push_back(d(o + i));
      return mlir::AffineMapAttr::get(mlir::AffineMap::get(nd, 0, exprs, mctx));
    };
    attrs.push_back(b.getNamedAttr("indexing_maps", b.getArrayAttr({map({0, 2}), map({1, 2}), map({0, 1})})));
  }
  Value prod = batched ? mlir::linalg::BatchMatmulOp::create(b, l, mlir::TypeRange{mm_t}, ins, mlir::ValueRange{acc},
                                                             attrs)
                             .getResult(0)
                       : mlir::linalg::MatmulOp::create(b, l, mlir::TypeRange{mm_t}, ins, mlir::ValueRange{acc}, attrs)
                             .getResult(0);
  return reshape(convert(wrap(ctx, prod, mm_shape), out_dtype), out.dims(), out.tags());
}
}  // namespace detail

Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const DotDims& dd) {
  return dot_general_as("dot_general", lhs, rhs, dd);
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
  return dot_general_as("dot", lhs, rhs, dd);
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
    return dot_general_as("matmul", lhs, rhs, dd);
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
  return dot_general_as("matmul", lhs, rhs, dd);
}

}  // namespace radix
