// "radix-math-approximation": replaces f32 transcendental math ops (exp, log,
// tanh, ...) — scalar or vector — with MLIR's polynomial approximations.
//
// Why: LLVM lowers a vector math.exp to one libm call per lane, so a
// vectorized sigmoid or tanh chain runs at scalar libm speed. The
// approximations are plain FMAs and bit tricks that stay vectorized. Their
// error is a few ulp (the op tests bound it); f64 keeps libm.
//
// exp of f32 vectors is Radix's own where the target allows: MLIR's builds
// 2^k from exponent bits around a degree-7 polynomial (clamps of x and of
// k, a conversion, an add and a shift: 20 instructions a vector), and
// softmax's exp loop is bound by these instructions (as fast from L2 as
// from DRAM). 16-lane vectors of AVX-512 targets (avx512=1, ScalefExp):
// vscalefps scales by 2^k in one instruction, underflows gradually and
// overflows to inf by itself (13 instructions, within 1 ulp instead of 4).
// Other f32 vectors of targets with FMA (fma=1, FloorExp: AVX2 hosts, 8
// lanes of AVX-512): k = floor(x log2(e)), so that k stays a normal
// exponent up to FLT_MAX and 2^k is k's bits shifted into place (15
// instructions, within 1.6 ulp). Scalars keep MLIR's.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

using mlir::Value;

// What ScalefExp and FloorExp build their exp from, over f32 vectors of
// `type`: splat constants, FMAs, clamps that keep a NaN, Cody-Waite's
// reduction and Horner's scheme.
struct ExpParts {
  mlir::ImplicitLocOpBuilder& b;
  mlir::VectorType type;

  Value splat(float v) const {
    return mlir::arith::ConstantOp::create(b, mlir::DenseElementsAttr::get(type, b.getF32FloatAttr(v)));
  }
  Value fma(Value a, Value x, Value y) const { return mlir::math::FmaOp::create(b, a, x, y); }
  // x clamped to [lo, hi], a NaN x kept: select(x >= lo or unordered, x,
  // lo), then the same against hi: one vmaxps and one vminps.
  Value clamp(Value x, float lo, float hi) const {
    auto bound = [&](Value v, mlir::arith::CmpFPredicate keep, float c) -> Value {
      Value cv = splat(c);
      return mlir::arith::SelectOp::create(b, mlir::arith::CmpFOp::create(b, keep, v, cv), v, cv);
    };
    return bound(bound(x, mlir::arith::CmpFPredicate::UGE, lo), mlir::arith::CmpFPredicate::ULE, hi);
  }
  // x - k * ln(2), ln(2) split in two (Cody-Waite: 0.693359375 has 9
  // significant bits, so k times it is exact for the k of f32's exponents).
  Value reduce(Value x, Value k) const {
    return fma(k, splat(2.12194440e-4f), fma(k, splat(-0.693359375f), x));
  }
  // The polynomial of coefficients `c`, the highest degree's first, at r.
  Value horner(Value r, std::initializer_list<float> c) const {
    Value p = splat(*c.begin());
    for (auto it = c.begin() + 1; it != c.end(); ++it) p = fma(p, r, splat(*it));
    return p;
  }
};

// exp(x) = 2^k * exp(r): k = roundeven(x * log2(e)), r = x - k * ln(2) with
// ln(2) split in two (Cody-Waite: 0.693359375 has 9 significant bits, so
// k times it is exact), |r| <= ln(2) / 2. x is first clamped to
// [-104, 88.8] (NaN passes through): below, exp is under half the smallest
// subnormal (0 after scaling); above, over FLT_MAX (inf after scaling); and
// k stays finite, so r is never inf - inf.
class ScalefExp : public mlir::OpRewritePattern<mlir::math::ExpOp> {
 public:
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(mlir::math::ExpOp op, mlir::PatternRewriter& rewriter) const override {
    auto type = mlir::dyn_cast<mlir::VectorType>(op.getType());
    if (!type || type.getRank() != 1 || type.isScalable() || type.getNumElements() != 16 ||
        !type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not vector<16xf32>");
    mlir::ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    const ExpParts e{b, type};
    Value x = e.clamp(op.getOperand(), -104.0f, 88.8f);
    Value k = mlir::math::RoundEvenOp::create(b, mlir::arith::MulFOp::create(b, x, e.splat(1.44269504088896341f)));
    Value r = e.reduce(x, k);
    // exp(r) by a degree-6 minimax polynomial (Remez on the relative error
    // over |r| <= ln(2) / 2: 0.03 ulp; c0 and c1 round to 1): at most 1.04
    // ulp in f32 over [-87, 88.7], against 3.83 for MLIR's degree-7 form.
    Value p = e.horner(r, {1.3836845989e-3f, 8.3748158043e-3f, 4.1668225570e-2f, 1.6666420170e-1f, 4.9999992080e-1f,
                           1.0f, 1.0f});
    // vscalefps(p, k) = p * 2^floor(k), all lanes (mask -1), current rounding (4).
    Value all = mlir::arith::ConstantOp::create(b, b.getI16IntegerAttr(-1));
    Value rounding = mlir::arith::ConstantOp::create(b, b.getI32IntegerAttr(4));
    Value y = mlir::LLVM::CallIntrinsicOp::create(b, type, b.getStringAttr("llvm.x86.avx512.mask.scalef.ps.512"),
                                                  mlir::ValueRange{p, k, p, all, rounding})
                  .getResult(0);
    rewriter.replaceOp(op, y);
    return mlir::success();
  }
};

// exp(x) = 2^k * exp(r): k = floor(x * log2(e)), r = x - k * ln(2) in
// [0, ln(2)) (Cody-Waite as in ScalefExp), exp(r) in [1, 2) by a degree-6
// minimax polynomial (Remez on the relative error over [-0.01, 0.70]: 0.04
// ulp; at most 1.6 ulp in f32 over [-87, 88.7], against 3.83 for MLIR's
// form). With x clamped to [-88, 88.8] (NaN passes through), k is in
// [-127, 128]: k + 127 is a biased exponent, 0 below the smallest normal
// result (2^k = 0: the result flushes to 0 under about -87.34) and 255 from
// FLT_MAX's (2^k = inf: the result overflows). k + 127 is built in the low
// bits of k + 1.5 * 2^23 + 127 and shifted into the exponent: one add and
// one shift, where MLIR's round-to-nearest k needs clamping to 127 (and its
// polynomial then covers r up to 0.77) and a conversion to integer.
// Measured with code for Zen 3 (AVX2) on a Zen 5 core, the two forms
// alternated in one process: softmax over 4096 x 4096 f32 17.9 -> 22.7 GB/s
// (one core), 34 -> 43 (two); x * sigmoid(x) over 16M values 1.30x. A
// hand-written AVX2 softmax with MLIR's exp ran at 0.65x of the same loop
// with this one: on AVX2 the exp loop is bound by its instructions.
class FloorExp : public mlir::OpRewritePattern<mlir::math::ExpOp> {
 public:
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(mlir::math::ExpOp op, mlir::PatternRewriter& rewriter) const override {
    auto type = mlir::dyn_cast<mlir::VectorType>(op.getType());
    if (!type || type.isScalable() || !type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not a vector of f32");
    mlir::ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    const ExpParts e{b, type};
    Value x = e.clamp(op.getOperand(), -88.0f, 88.8f);
    Value k = mlir::math::FloorOp::create(b, mlir::arith::MulFOp::create(b, x, e.splat(1.44269504088896341f)));
    Value p = e.horner(e.reduce(x, k), {0x1.0008dp-9f, 0x1.fe2a66p-8f, 0x1.57679ep-5f, 0x1.553726p-3f, 0x1.0000c6p-1f,
                                        0x1.fffffap-1f, 1.0f});
    // k + 1.5 * 2^23 + 127 is exact (|k| <= 128); its low 9 bits are k + 127.
    Value biased = mlir::arith::AddFOp::create(b, k, e.splat(12582912.0f + 127.0f));
    auto itype = mlir::VectorType::get(type.getShape(), b.getI32Type());
    Value bits = mlir::arith::ShLIOp::create(
        b, mlir::arith::BitcastOp::create(b, itype, biased),
        mlir::arith::ConstantOp::create(b, mlir::DenseElementsAttr::get(itype, b.getI32IntegerAttr(23))));
    Value y = mlir::arith::MulFOp::create(b, p, mlir::arith::BitcastOp::create(b, type, bits));
    rewriter.replaceOp(op, y);
    return mlir::success();
  }
};

struct MathApproximationPass
    : public mlir::PassWrapper<MathApproximationPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MathApproximationPass)

  MathApproximationPass() = default;
  MathApproximationPass(const MathApproximationPass& o) : PassWrapper(o) {}
  Option<bool> avx512{*this, "avx512", llvm::cl::desc("exp of 16-lane f32 vectors by vscalefps (AVX-512F targets)"),
                      llvm::cl::init(false)};
  Option<bool> fma{*this, "fma", llvm::cl::desc("exp of other f32 vectors with k = floor(x log2 e) (targets with FMA)"),
                   llvm::cl::init(false)};

  llvm::StringRef getArgument() const override { return "radix-math-approximation"; }
  llvm::StringRef getDescription() const override {
    return "Replace f32 exp/log/tanh/... with vectorizable polynomial approximations";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::math::MathDialect, mlir::arith::ArithDialect, mlir::vector::VectorDialect,
                    mlir::LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    // Ahead of MLIR's exp (benefit 1) where it applies.
    if (avx512) patterns.add<ScalefExp>(&getContext(), /*benefit=*/3);
    if (fma) patterns.add<FloorExp>(&getContext(), /*benefit=*/2);
    // The predicate receives full op names ("math.exp").
    mlir::populateMathPolynomialApproximationPatterns(patterns, [](llvm::StringRef name) {
      return llvm::is_contained({mlir::math::ExpOp::getOperationName(), mlir::math::ExpM1Op::getOperationName(),
                                 mlir::math::LogOp::getOperationName(), mlir::math::Log1pOp::getOperationName(),
                                 mlir::math::Log2Op::getOperationName(), mlir::math::TanhOp::getOperationName(),
                                 mlir::math::ErfOp::getOperationName()},
                                name);
    });
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_math_approximation_pass() { return std::make_unique<MathApproximationPass>(); }

}  // namespace radix
