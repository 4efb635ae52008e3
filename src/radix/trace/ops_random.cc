// Random-number ops: Philox 4x32-10 emitted inside one linalg.generic per
// draw (the per-element counter comes from linalg.index), so a draw is an
// ordinary elementwise op the schedule tiles and vectorizes, and its stream
// does not depend on the schedule. Shape checks live in radix::infer (no
// MLIR); the emitters call them first.
#include "radix/trace/ops_random.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "radix/core/half.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Location;
using mlir::OpBuilder;
using mlir::Value;
using mlir::ValueRange;
namespace ar = mlir::arith;

namespace {

// ---------------------------------------------------------------- messages

// The shortest form that reads back as the same double ("0.1", "1000").
std::string fmt(double v) {
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// "uniform(u32[4], f32[2,3], lo=0, hi=1)": the op, every shape, the attributes.
std::string call(const char* op, std::initializer_list<Shape> shapes, const std::string& attrs = "") {
  std::string s = std::string(op) + "(";
  bool first = true;
  for (const Shape& sh : shapes) {
    if (!first) s += ", ";
    s += sh.to_string();
    first = false;
  }
  if (!attrs.empty()) {
    if (!first) s += ", ";
    s += attrs;
  }
  s += ")";
  return s;
}

[[noreturn]] void bad(const std::string& call, const std::string& why) { fail(call + ": " + why); }

void check_state(const std::string& c, const Shape& state) {
  if (state.dtype() != DType::kU32 || state.rank() != 1 || state.dim(0) != 4)
    bad(c, "the RNG state must be u32[4] {key0, key1, counter_lo, counter_hi} (see rng_state_from_seed), got " +
               state.to_string());
}

void check_float_result(const std::string& c, const Shape& shape) {
  if (!is_float(shape.dtype()))
    bad(c, "the result dtype must be a float (f16, bf16, f32, f64), got " + std::string(dtype_name(shape.dtype())));
}

// The value of dtype d nearest to v (f16 / bf16 through f32).
double round_to(DType d, double v) {
  switch (d) {
    case DType::kF16: return f16_to_float(float_to_f16(static_cast<float>(v)));
    case DType::kBF16: return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    case DType::kF32: return static_cast<float>(v);
    default: return v;
  }
}

// The largest value of float dtype d below v (v finite, a value of d).
double below(DType d, double v) {
  if (d == DType::kF64) return std::nextafter(v, -INFINITY);
  if (d == DType::kF32) return std::nextafter(static_cast<float>(v), -INFINITY);
  // 16-bit: step the sign-magnitude bits one toward -inf.
  const bool f16 = d == DType::kF16;
  uint16_t bits = f16 ? float_to_f16(static_cast<float>(v)) : float_to_bf16(static_cast<float>(v));
  if ((bits & 0x7fff) == 0) bits = 0x8001;         // +-0 -> the smallest negative subnormal
  else if (bits & 0x8000) ++bits;                  // negative: away from zero
  else --bits;                                     // positive: toward zero
  return f16 ? f16_to_float(bits) : bf16_to_float(bits);
}

int mantissa_bits(DType d) {
  switch (d) {
    case DType::kF16: return 10;
    case DType::kBF16: return 7;
    case DType::kF32: return 23;
    default: return 52;
  }
}

// f16 / bf16 draws compute in f32 and round once.
DType compute_dtype(DType d) { return d == DType::kF64 ? DType::kF64 : DType::kF32; }

// ---------------------------------------------------------------- Philox

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;  // round multipliers
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key increments
constexpr int kRounds = 10;

Value c32(OpBuilder& b, Location l, uint32_t v) {
  return ar::ConstantOp::create(b, l, b.getIntegerAttr(b.getI32Type(), llvm::APInt(32, v)));
}
Value c64(OpBuilder& b, Location l, uint64_t v) {
  return ar::ConstantOp::create(b, l, b.getIntegerAttr(b.getI64Type(), llvm::APInt(64, v)));
}
Value zext64(OpBuilder& b, Location l, Value v) { return ar::ExtUIOp::create(b, l, b.getI64Type(), v); }
Value trunc32(OpBuilder& b, Location l, Value v) { return ar::TruncIOp::create(b, l, b.getI32Type(), v); }
Value shr(OpBuilder& b, Location l, Value v, uint64_t n) {
  return ar::ShRUIOp::create(b, l, v, v.getType().isInteger(64) ? c64(b, l, n) : c32(b, l, static_cast<uint32_t>(n)));
}
Value shl(OpBuilder& b, Location l, Value v, uint64_t n) {
  return ar::ShLIOp::create(b, l, v, v.getType().isInteger(64) ? c64(b, l, n) : c32(b, l, static_cast<uint32_t>(n)));
}
// (hi << 32) | lo as i64 from two i32 words.
Value join64(OpBuilder& b, Location l, Value lo, Value hi) {
  return ar::OrIOp::create(b, l, shl(b, l, zext64(b, l, hi), 32), zext64(b, l, lo));
}

using Block = std::array<Value, 4>;

// Philox 4x32-10 of counter c under key {k0, k1} (all i32). The 32x32->64
// products are i64 multiplies of zero-extended words, which vectorize
// (pmuludq on x86).
Block philox_rounds(OpBuilder& b, Location l, Block c, Value k0, Value k1) {
  Value m0 = c64(b, l, kMul0), m1 = c64(b, l, kMul1);
  for (int r = 0; r < kRounds; ++r) {
    if (r > 0) {
      k0 = ar::AddIOp::create(b, l, k0, c32(b, l, kWeyl0));
      k1 = ar::AddIOp::create(b, l, k1, c32(b, l, kWeyl1));
    }
    Value p0 = ar::MulIOp::create(b, l, zext64(b, l, c[0]), m0);
    Value p1 = ar::MulIOp::create(b, l, zext64(b, l, c[2]), m1);
    Value hi0 = trunc32(b, l, shr(b, l, p0, 32)), lo0 = trunc32(b, l, p0);
    Value hi1 = trunc32(b, l, shr(b, l, p1, 32)), lo1 = trunc32(b, l, p1);
    c = {ar::XOrIOp::create(b, l, ar::XOrIOp::create(b, l, hi1, c[1]), k0), lo1,
         ar::XOrIOp::create(b, l, ar::XOrIOp::create(b, l, hi0, c[3]), k1), lo0};
  }
  return c;
}

// The row-major linear index of the current element of a generic over
// `shape`, as i64.
Value linear_index(OpBuilder& b, Location l, const Shape& shape) {
  Value lin = ar::ConstantIndexOp::create(b, l, 0);
  for (int i = 0; i < shape.rank(); ++i) {
    Value dim = ar::ConstantIndexOp::create(b, l, shape.dim(i));
    Value idx = mlir::linalg::IndexOp::create(b, l, static_cast<uint64_t>(i));
    lin = ar::AddIOp::create(b, l, ar::MulIOp::create(b, l, lin, dim), idx);
  }
  return ar::IndexCastOp::create(b, l, b.getI64Type(), lin);
}

// The block of the current element: counter {lo32(c + i), hi32(c + i), 0, 0}
// with c from the state words w = {key0, key1, counter_lo, counter_hi}.
Block element_block(OpBuilder& b, Location l, ValueRange w, const Shape& shape) {
  Value ctr = ar::AddIOp::create(b, l, join64(b, l, w[2], w[3]), linear_index(b, l, shape));
  Value zero = c32(b, l, 0);
  return philox_rounds(b, l, {trunc32(b, l, ctr), trunc32(b, l, shr(b, l, ctr, 32)), zero, zero}, w[0], w[1]);
}

// ---------------------------------------------------------------- bits -> floats

Value float_const(OpBuilder& b, Location l, mlir::Type t, double v) {
  return ar::ConstantOp::create(b, l, b.getFloatAttr(t, v));
}

// k * 2^-m in [0, 1) as f32 from the top m bits of the i32 word w (m <= 23),
// through the bits of 1.k in [1, 2) minus 1 (exact). open: + 2^-(m+1), the
// open interval (0, 1) (still exact: m + 1 <= 24 significant bits).
Value unit_f32(OpBuilder& b, Location l, Value w, int m, bool open) {
  Value k = shr(b, l, w, static_cast<uint64_t>(32 - m));
  Value bits = ar::OrIOp::create(b, l, shl(b, l, k, static_cast<uint64_t>(23 - m)), c32(b, l, 0x3F800000u));
  mlir::Type f32 = b.getF32Type();
  Value f = ar::SubFOp::create(b, l, ar::BitcastOp::create(b, l, f32, bits), float_const(b, l, f32, 1.0));
  if (open) f = ar::AddFOp::create(b, l, f, float_const(b, l, f32, std::ldexp(1.0, -(m + 1))));
  return f;
}

// The same in f64 from the top 52 bits of lo | hi << 32.
Value unit_f64(OpBuilder& b, Location l, Value lo, Value hi, bool open) {
  Value bits = ar::OrIOp::create(b, l, shr(b, l, join64(b, l, lo, hi), 12), c64(b, l, 0x3FF0000000000000ull));
  mlir::Type f64 = b.getF64Type();
  Value f = ar::SubFOp::create(b, l, ar::BitcastOp::create(b, l, f64, bits), float_const(b, l, f64, 1.0));
  if (open) f = ar::AddFOp::create(b, l, f, float_const(b, l, f64, 0x1p-53));
  return f;
}

// An open-interval unit value in the compute dtype of d.
Value open_unit(OpBuilder& b, Location l, const Block& x, DType d, int first_word = 0) {
  if (compute_dtype(d) == DType::kF64) return unit_f64(b, l, x[first_word], x[first_word + 1], true);
  return unit_f32(b, l, x[first_word], 23, true);
}

Value to_dtype(OpBuilder& b, Location l, Value v, DType d) {
  if (!is_half_float(d)) return v;
  return ar::TruncFOp::create(b, l, element_type(b.getContext(), d), v);
}

// -log(-log(u)) for an open-interval u.
Value gumbel_of(OpBuilder& b, Location l, const Block& x, DType d) {
  Value u = open_unit(b, l, x, d);
  Value e = ar::NegFOp::create(b, l, mlir::math::LogOp::create(b, l, u));
  return ar::NegFOp::create(b, l, mlir::math::LogOp::create(b, l, e));
}

// ---------------------------------------------------------------- emission

// Row k of t (along axis 0), as a tensor of t's other axes (rank 0 for a
// rank-1 t): a rank-reducing tensor.extract_slice. Rows are contiguous; a
// column slice would have a non-unit innermost stride, which the CPU
// lowering of the vectorized reads does not handle.
Tensor row(CompilationContext& ctx, const Tensor& t, int64_t k) {
  const Shape& s = t.shape();
  OpBuilder& b = ctx.builder();
  llvm::SmallVector<mlir::OpFoldResult> offsets, sizes, strides;
  for (int i = 0; i < s.rank(); ++i) {
    offsets.push_back(b.getIndexAttr(i == 0 ? k : 0));
    sizes.push_back(b.getIndexAttr(i == 0 ? 1 : s.dim(i)));
    strides.push_back(b.getIndexAttr(1));
  }
  Shape out = s.drop_axis(0);
  Value v = mlir::tensor::ExtractSliceOp::create(b, ctx.loc(), tensor_type(&ctx.mlir_context(), out), value_of(t),
                                                 offsets, sizes, strides);
  return wrap(ctx, v, out);
}

std::vector<int> identity_axes(int rank) {
  std::vector<int> m;
  for (int i = 0; i < rank; ++i) m.push_back(i);
  return m;
}

// The state advanced by n blocks: {key0, key1, lo32(c + n), hi32(c + n)}.
Tensor advance(CompilationContext& ctx, const std::array<Tensor, 4>& words, int64_t n) {
  const Tensor* ops[] = {&words[0], &words[1], &words[2], &words[3]};
  std::vector<std::vector<int>> maps(4);
  return emit_map(ctx, ops, maps, rng_state_shape(), [n](OpBuilder& b, Location l, ValueRange w) -> Value {
    Value ctr = ar::AddIOp::create(b, l, join64(b, l, w[2], w[3]), c64(b, l, static_cast<uint64_t>(n)));
    Value i = mlir::linalg::IndexOp::create(b, l, 0);
    auto is = [&](int64_t k) {
      return ar::CmpIOp::create(b, l, ar::CmpIPredicate::eq, i, ar::ConstantIndexOp::create(b, l, k));
    };
    Value r = ar::SelectOp::create(b, l, is(2), trunc32(b, l, ctr), trunc32(b, l, shr(b, l, ctr, 32)));
    r = ar::SelectOp::create(b, l, is(1), w[1], r);
    return ar::SelectOp::create(b, l, is(0), w[0], r);
  });
}

// The samples' body: the current element's block and the values of the
// `extra` operands (same dims as the samples) -> one sample.
using DrawFn = std::function<Value(OpBuilder&, Location, const Block&, ValueRange extra)>;

// One draw: a linalg.generic over `out` computing each element's Philox
// block and `fn` of it, plus the advanced state.
RandomResult<> draw(CompilationContext& ctx, const Tensor& state, const Shape& out,
                    std::initializer_list<const Tensor*> extra, const DrawFn& fn) {
  std::array<Tensor, 4> w;
  for (int k = 0; k < 4; ++k) w[static_cast<size_t>(k)] = row(ctx, state, k);
  std::vector<const Tensor*> ops = {&w[0], &w[1], &w[2], &w[3]};
  std::vector<std::vector<int>> maps(4);
  for (const Tensor* t : extra) {
    ops.push_back(t);
    maps.push_back(identity_axes(t->rank()));
  }
  Tensor samples = emit_map(ctx, ops, maps, out, [&](OpBuilder& b, Location l, ValueRange v) -> Value {
    return fn(b, l, element_block(b, l, v.take_front(4), out), v.drop_front(4));
  });
  return {samples, advance(ctx, w, out.count())};
}

}  // namespace

// ---------------------------------------------------------------- shape inference

namespace infer {

Shape rng_from_seed(const Shape& seed) {
  if (seed.rank() != 0 || !is_integer(seed.dtype()))
    bad(call("rng_from_seed", {seed}), "the seed must be a rank-0 integer tensor, got " + seed.to_string());
  return rng_state_shape();
}

Shape random_bits(const Shape& state, const Shape& shape) {
  const std::string c = call("random_bits", {state, shape});
  check_state(c, state);
  if (!is_integer(shape.dtype()))
    bad(c, "the result dtype must be an integer type, got " + std::string(dtype_name(shape.dtype())));
  return shape;
}

Shape uniform(const Shape& state, const Shape& shape, double lo, double hi) {
  const std::string c = call("uniform", {state, shape}, "lo=" + fmt(lo) + ", hi=" + fmt(hi));
  check_state(c, state);
  check_float_result(c, shape);
  const DType d = shape.dtype();
  if (!std::isfinite(lo) || !std::isfinite(hi)) bad(c, "lo and hi must be finite");
  if (!(lo < hi)) bad(c, "lo must be below hi");
  const double lo_d = round_to(d, lo), hi_d = round_to(d, hi);
  const std::string dn(dtype_name(d));
  if (!std::isfinite(lo_d) || !std::isfinite(hi_d)) bad(c, "lo or hi overflows " + dn);
  if (!(lo_d < hi_d)) bad(c, "lo and hi round to the same " + dn + " value " + fmt(lo_d));
  if (!std::isfinite(round_to(compute_dtype(d), hi_d - lo_d)))
    bad(c, "hi - lo overflows " + std::string(dtype_name(compute_dtype(d))));
  return shape;
}

Shape uniform_int(const Shape& state, const Shape& shape, int64_t lo, int64_t hi) {
  const std::string c =
      call("uniform_int", {state, shape}, "lo=" + std::to_string(lo) + ", hi=" + std::to_string(hi));
  check_state(c, state);
  const DType d = shape.dtype();
  if (!is_integer(d)) bad(c, "the result dtype must be an integer type, got " + std::string(dtype_name(d)));
  if (lo >= hi) bad(c, "lo must be below hi");
  const int bits = dtype_bits(d);
  // The dtype's range as [min, max] in __int128 so u64's max fits.
  const __int128 min = is_signed_int(d) ? -(static_cast<__int128>(1) << (bits - 1)) : 0;
  const __int128 max = (static_cast<__int128>(1) << (is_signed_int(d) ? bits - 1 : bits)) - 1;
  if (lo < min || static_cast<__int128>(hi) - 1 > max)
    bad(c, "[lo, hi) must lie within the range of " + std::string(dtype_name(d)));
  return shape;
}

Shape normal(const Shape& state, const Shape& shape, double mean, double stddev) {
  const std::string c = call("normal", {state, shape}, "mean=" + fmt(mean) + ", stddev=" + fmt(stddev));
  check_state(c, state);
  check_float_result(c, shape);
  if (!std::isfinite(mean) || !std::isfinite(stddev) || !(stddev > 0))
    bad(c, "mean must be finite and stddev finite and positive");
  return shape;
}

Shape gumbel(const Shape& state, const Shape& shape) {
  const std::string c = call("gumbel", {state, shape});
  check_state(c, state);
  check_float_result(c, shape);
  return shape;
}

Shape bernoulli(const Shape& state, double p, const Shape& shape) {
  const std::string c = call("bernoulli", {state, shape}, "p=" + fmt(p));
  check_state(c, state);
  if (!(p >= 0 && p <= 1)) bad(c, "p must be in [0, 1]");
  if (!is_bool(shape.dtype()))
    bad(c, "the result dtype must be bool, got " + std::string(dtype_name(shape.dtype())));
  return shape;
}

Shape categorical(const Shape& state, const Shape& logits, const Axis& axis) {
  const std::string c = call("categorical", {state, logits}, "axis=" + axis.to_string());
  check_state(c, state);
  if (!is_float(logits.dtype()))
    bad(c, "the logits must be floats, got " + std::string(dtype_name(logits.dtype())));
  auto a = logits.find_axis(axis);
  if (!a) bad(c, "axis " + axis.to_string() + " does not exist");
  const int64_t n = logits.dim(*a);
  if (n == 0) bad(c, "axis " + axis.to_string() + " is empty: there is no category to draw");
  if (n > std::numeric_limits<int32_t>::max()) bad(c, "axis " + axis.to_string() + " is too long for i32 indices");
  return logits.drop_axis(*a).with_dtype(DType::kI32);
}

Shape philox4x32(const Shape& counters, const Shape& key) {
  const std::string c = call("philox4x32", {counters, key});
  if (counters.dtype() != DType::kU32 || counters.rank() == 0 || counters.dim(counters.rank() - 1) != 4)
    bad(c, "the counters must be u32[..., 4], got " + counters.to_string());
  if (key.dtype() != DType::kU32 || key.rank() != 1 || key.dim(0) != 2)
    bad(c, "the key must be u32[2], got " + key.to_string());
  return counters;
}

}  // namespace infer

// ---------------------------------------------------------------- state

Shape rng_state_shape() { return Shape(DType::kU32, {4}); }

std::array<uint32_t, 4> rng_state_from_seed(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), 0, 0};
}

Tensor rng_from_seed(uint64_t seed) {
  CompilationContext::require_current("rng_from_seed");
  const std::array<uint32_t, 4> s = rng_state_from_seed(seed);
  const double data[4] = {double(s[0]), double(s[1]), double(s[2]), double(s[3])};
  return constant(rng_state_shape(), data);
}

Tensor rng_from_seed(const Tensor& seed) {
  CompilationContext& ctx = context_for("rng_from_seed", {&seed});
  infer::rng_from_seed(seed.shape());
  const Tensor* ops[] = {&seed};
  std::vector<std::vector<int>> maps(1);
  const bool is_signed = is_signed_int(seed.dtype());
  return emit_map(ctx, ops, maps, rng_state_shape(), [is_signed](OpBuilder& b, Location l, ValueRange v) -> Value {
    Value s = v[0];
    if (!s.getType().isInteger(64))
      s = is_signed ? Value(ar::ExtSIOp::create(b, l, b.getI64Type(), s)) : zext64(b, l, s);
    Value i = mlir::linalg::IndexOp::create(b, l, 0);
    auto is = [&](int64_t k) {
      return ar::CmpIOp::create(b, l, ar::CmpIPredicate::eq, i, ar::ConstantIndexOp::create(b, l, k));
    };
    Value r = ar::SelectOp::create(b, l, is(1), trunc32(b, l, shr(b, l, s, 32)), c32(b, l, 0));
    return ar::SelectOp::create(b, l, is(0), trunc32(b, l, s), r);
  });
}

// ---------------------------------------------------------------- draws

RandomResult<> random_bits(const Tensor& state, const Shape& shape) {
  CompilationContext& ctx = context_for("random_bits", {&state});
  const Shape out = infer::random_bits(state.shape(), shape);
  mlir::Type et = element_type(&ctx.mlir_context(), out.dtype());
  const int bits = dtype_bits(out.dtype());
  return draw(ctx, state, out, {}, [=](OpBuilder& b, Location l, const Block& x, ValueRange) -> Value {
    if (bits == 64) return join64(b, l, x[0], x[1]);
    if (bits == 32) return x[0];
    return ar::TruncIOp::create(b, l, et, x[0]);
  });
}

RandomResult<> uniform(const Tensor& state, const Shape& shape, double lo, double hi) {
  CompilationContext& ctx = context_for("uniform", {&state});
  const Shape out = infer::uniform(state.shape(), shape, lo, hi);
  const DType d = out.dtype();
  const double lo_d = round_to(d, lo), hi_d = round_to(d, hi), top = below(d, hi_d);
  return draw(ctx, state, out, {}, [=](OpBuilder& b, Location l, const Block& x, ValueRange) -> Value {
    const bool wide = d == DType::kF64;
    mlir::Type ct = wide ? mlir::Type(b.getF64Type()) : mlir::Type(b.getF32Type());
    mlir::Type et = element_type(b.getContext(), d);
    Value u = wide ? unit_f64(b, l, x[0], x[1], false) : unit_f32(b, l, x[0], mantissa_bits(d), false);
    Value v = ar::AddFOp::create(b, l, float_const(b, l, ct, lo_d),
                                 ar::MulFOp::create(b, l, float_const(b, l, ct, hi_d - lo_d), u));
    v = to_dtype(b, l, v, d);
    // Rounding (of the scale, the product or to f16 / bf16) may reach hi.
    v = ar::MaximumFOp::create(b, l, v, float_const(b, l, et, lo_d));
    return ar::MinimumFOp::create(b, l, v, float_const(b, l, et, top));
  });
}

RandomResult<> uniform_int(const Tensor& state, const Shape& shape, int64_t lo, int64_t hi) {
  CompilationContext& ctx = context_for("uniform_int", {&state});
  const Shape out = infer::uniform_int(state.shape(), shape, lo, hi);
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // in [1, 2^64)
  const int bits = dtype_bits(out.dtype());
  mlir::Type et = element_type(&ctx.mlir_context(), out.dtype());
  return draw(ctx, state, out, {}, [=](OpBuilder& b, Location l, const Block& x, ValueRange) -> Value {
    Value s = c64(b, l, span);
    Value off;
    if (bits <= 32) {
      // floor((x1 * 2^32 + x0) * span / 2^64) with span <= 2^32, in i64:
      // (x1 * span + (x0 * span >> 32)) >> 32; neither product nor sum wraps.
      Value t = shr(b, l, ar::MulIOp::create(b, l, zext64(b, l, x[0]), s), 32);
      off = shr(b, l, ar::AddIOp::create(b, l, ar::MulIOp::create(b, l, zext64(b, l, x[1]), s), t), 32);
    } else {
      // floor((xh * 2^64 + xl) * span / 2^128) = hi64(xh * span + hi64(xl * span)),
      // the 64x64 -> 128 products from 32-bit halves (vectorizable i64 ops).
      auto mul_wide = [&](Value a, Value& hi_out) -> Value {
        Value mask = c64(b, l, 0xffffffffull);
        Value al = ar::AndIOp::create(b, l, a, mask), ah = shr(b, l, a, 32);
        Value bl = c64(b, l, span & 0xffffffffull), bh = c64(b, l, span >> 32);
        Value ll = ar::MulIOp::create(b, l, al, bl), lh = ar::MulIOp::create(b, l, al, bh);
        Value hl = ar::MulIOp::create(b, l, ah, bl), hh = ar::MulIOp::create(b, l, ah, bh);
        Value mid = ar::AddIOp::create(b, l, shr(b, l, ll, 32),
                                       ar::AddIOp::create(b, l, ar::AndIOp::create(b, l, lh, mask),
                                                          ar::AndIOp::create(b, l, hl, mask)));
        hi_out = ar::AddIOp::create(
            b, l, ar::AddIOp::create(b, l, hh, shr(b, l, mid, 32)),
            ar::AddIOp::create(b, l, shr(b, l, lh, 32), shr(b, l, hl, 32)));
        return ar::MulIOp::create(b, l, a, s);  // the low 64 bits
      };
      Value t, h1;
      mul_wide(join64(b, l, x[0], x[1]), t);
      Value l1 = mul_wide(join64(b, l, x[2], x[3]), h1);
      Value sum = ar::AddIOp::create(b, l, l1, t);
      Value carry = ar::CmpIOp::create(b, l, ar::CmpIPredicate::ult, sum, l1);
      off = ar::AddIOp::create(b, l, h1, zext64(b, l, carry));
    }
    Value r = ar::AddIOp::create(b, l, c64(b, l, static_cast<uint64_t>(lo)), off);
    return bits == 64 ? r : Value(ar::TruncIOp::create(b, l, et, r));
  });
}

RandomResult<> normal(const Tensor& state, const Shape& shape, double mean, double stddev) {
  CompilationContext& ctx = context_for("normal", {&state});
  const Shape out = infer::normal(state.shape(), shape, mean, stddev);
  const DType d = out.dtype();
  return draw(ctx, state, out, {}, [=](OpBuilder& b, Location l, const Block& x, ValueRange) -> Value {
    const bool wide = compute_dtype(d) == DType::kF64;
    mlir::Type ct = wide ? mlir::Type(b.getF64Type()) : mlir::Type(b.getF32Type());
    // Box-Muller: u1 in (0, 1) keeps log finite; u2 in [0, 1) is the angle.
    Value u1 = open_unit(b, l, x, d, 0);
    Value u2 = wide ? unit_f64(b, l, x[2], x[3], false) : unit_f32(b, l, x[1], 23, false);
    Value r = mlir::math::SqrtOp::create(
        b, l, ar::MulFOp::create(b, l, float_const(b, l, ct, -2.0), mlir::math::LogOp::create(b, l, u1)));
    Value theta = ar::MulFOp::create(b, l, float_const(b, l, ct, 2 * M_PI), u2);
    Value z = ar::MulFOp::create(b, l, r, mlir::math::CosOp::create(b, l, theta));
    if (mean != 0.0 || stddev != 1.0)
      z = ar::AddFOp::create(b, l, float_const(b, l, ct, mean), ar::MulFOp::create(b, l, float_const(b, l, ct, stddev), z));
    return to_dtype(b, l, z, d);
  });
}

RandomResult<> gumbel(const Tensor& state, const Shape& shape) {
  CompilationContext& ctx = context_for("gumbel", {&state});
  const Shape out = infer::gumbel(state.shape(), shape);
  const DType d = out.dtype();
  return draw(ctx, state, out, {}, [=](OpBuilder& b, Location l, const Block& x, ValueRange) -> Value {
    return to_dtype(b, l, gumbel_of(b, l, x, d), d);
  });
}

RandomResult<> bernoulli(const Tensor& state, double p, const Shape& shape) {
  CompilationContext& ctx = context_for("bernoulli", {&state});
  const Shape out = infer::bernoulli(state.shape(), p, shape);
  const uint64_t threshold = static_cast<uint64_t>(std::llround(std::ldexp(p, 32)));  // in [0, 2^32]
  return draw(ctx, state, out, {}, [=](OpBuilder& b, Location l, const Block& x, ValueRange) -> Value {
    return ar::CmpIOp::create(b, l, ar::CmpIPredicate::ult, zext64(b, l, x[0]), c64(b, l, threshold));
  });
}

RandomResult<> categorical(const Tensor& state, const Tensor& logits, const Axis& axis) {
  CompilationContext& ctx = context_for("categorical", {&state, &logits});
  const Shape out = infer::categorical(state.shape(), logits.shape(), axis);
  const DType d = logits.dtype();
  const DType ct = compute_dtype(d);
  // logits + gumbel noise in the compute dtype, then the first argmax.
  RandomResult<> noisy = draw(ctx, state, logits.shape().with_dtype(ct), {&logits},
                              [=](OpBuilder& b, Location l, const Block& x, ValueRange v) -> Value {
                                Value z = v[0];
                                if (d != ct) z = ar::ExtFOp::create(b, l, element_type(b.getContext(), ct), z);
                                return ar::AddFOp::create(b, l, z, gumbel_of(b, l, x, d));
                              });
  return {first_extremum_index(ctx, noisy.samples, *logits.shape().find_axis(axis), /*is_max=*/true, out), noisy.state};
}

Tensor philox4x32(const Tensor& counters, const Tensor& key) {
  CompilationContext& ctx = context_for("philox4x32", {&counters, &key});
  const Shape out = infer::philox4x32(counters.shape(), key.shape());
  // The counter words as rows: the word axis moved to the front.
  Axes perm = {out.rank() - 1};
  for (int i = 0; i + 1 < out.rank(); ++i) perm.push_back(i);
  const Tensor words = transpose(counters, perm);
  std::array<Tensor, 6> w = {row(ctx, key, 0), row(ctx, key, 1)};
  for (int k = 0; k < 4; ++k) w[static_cast<size_t>(2 + k)] = row(ctx, words, k);
  const Tensor* ops[] = {&w[0], &w[1], &w[2], &w[3], &w[4], &w[5]};
  std::vector<std::vector<int>> maps(2);
  for (int k = 0; k < 4; ++k) maps.push_back(identity_axes(out.rank() - 1));
  const int lane_axis = out.rank() - 1;
  return emit_map(ctx, ops, maps, out, [lane_axis](OpBuilder& b, Location l, ValueRange v) -> Value {
    Block x = philox_rounds(b, l, {v[2], v[3], v[4], v[5]}, v[0], v[1]);
    Value lane = mlir::linalg::IndexOp::create(b, l, static_cast<uint64_t>(lane_axis));
    Value r = x[3];
    for (int k = 2; k >= 0; --k) {
      Value is_k = ar::CmpIOp::create(b, l, ar::CmpIPredicate::eq, lane, ar::ConstantIndexOp::create(b, l, k));
      r = ar::SelectOp::create(b, l, is_k, x[static_cast<size_t>(k)], r);
    }
    return r;
  });
}

}  // namespace radix
