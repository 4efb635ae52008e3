#include "radix/nn/rope.h"

#include <cmath>
#include <vector>

#include "radix/nn/check.h"
#include "radix/trace/ops.h"

namespace radix::nn {

RopeTable rope_table(const Tensor& positions, int64_t s, int64_t head_dim, const RopeOptions& opts) {
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, "nn::rope_table", {&positions}, why); };
  req(head_dim > 0 && head_dim % 2 == 0, "the head dim must be even and positive, got " + std::to_string(head_dim));
  req(s > 0, "the sequence length must be positive, got " + std::to_string(s));
  req(is_integer(positions.dtype()), "positions must be integers");
  req(positions.rank() == 0 || (positions.rank() == 1 && positions.shape().dim(0) == s),
      "positions must be rank 0 (an offset) or [s] with s = " + std::to_string(s));
  req(opts.theta > 0, "theta must be > 0");
  const int64_t half = head_dim / 2;
  // pos[s] in f32: offset + i, or the given positions.
  Tensor pos = positions.rank() == 0 ? iota(s, positions.dtype()) + positions : positions.with_tags({Tag()});
  pos = detail::as_dtype(pos, DType::kF32);
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j)
    inv[static_cast<size_t>(j)] = std::pow(opts.theta, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
  Tensor inv_freq = constant(Shape(DType::kF32, {half}), inv);
  const Shape ang_shape(DType::kF32, {s, half});
  Tensor ang = broadcast(pos, ang_shape, {0}) * broadcast(inv_freq, ang_shape, {1});
  return {cos(ang), sin(ang)};
}

namespace {

// x's sequence and head-dim axes, checked (both named in the error).
std::pair<int, int> rope_axes(const Tensor& x, const RopeOptions& opts, const char* layer,
                              std::initializer_list<const Tensor*> operands) {
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, layer, operands, why); };
  req(is_float(x.dtype()), "x must be a float tensor");
  std::optional<int> sa = x.shape().find_axis(opts.seq_axis), da = x.shape().find_axis(opts.head_dim_axis);
  req(sa.has_value(), "no sequence axis " + opts.seq_axis.to_string());
  req(da.has_value(), "no head-dim axis " + opts.head_dim_axis.to_string());
  req(*sa != *da, "the sequence and head-dim axes must differ");
  const int64_t hd = x.shape().dim(*da);
  req(hd % 2 == 0, "the head dim must be even, got " + std::to_string(hd));
  return {*sa, *da};
}

}  // namespace

Tensor rope(const Tensor& x, const Tensor& positions, const RopeOptions& opts) {
  const auto [sa, da] = rope_axes(x, opts, "nn::rope", {&x, &positions});
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, "nn::rope", {&x, &positions}, why); };
  const int64_t s = x.shape().dim(sa);
  req(is_integer(positions.dtype()), "positions must be integers");
  req(positions.rank() == 0 || (positions.rank() == 1 && positions.shape().dim(0) == s),
      "positions must be rank 0 (an offset) or [s] with s = " + std::to_string(s));
  req(opts.theta > 0, "theta must be > 0");
  return rope(x, rope_table(positions, s, x.shape().dim(da), opts), opts);
}

Tensor rope(const Tensor& x, const RopeTable& table, const RopeOptions& opts) {
  const auto [sa, da] = rope_axes(x, opts, "nn::rope", {&x, &table.cos, &table.sin});
  const int64_t s = x.shape().dim(sa), hd = x.shape().dim(da), half = hd / 2;
  for (const Tensor* t : {&table.cos, &table.sin})
    detail::require(t->dtype() == DType::kF32 && t->rank() == 2 && t->dim(0) == s && t->dim(1) == half, "nn::rope",
                    {&x, &table.cos, &table.sin},
                    "the table's cos and sin must be f32[" + std::to_string(s) + "," + std::to_string(half) +
                        "] (x's sequence length, half its head dim)");
  Tensor cs = table.cos, sn = table.sin;
  const DType cd = detail::compute_dtype(x.dtype());
  Tensor xf = cd == x.dtype() ? x : convert(x, cd);
  if (cd != DType::kF32) cs = convert(cs, cd), sn = convert(sn, cd);
  Tensor a, b;
  if (opts.layout == RopeLayout::kHalfSplit) {
    a = slice(xf, da, 0, half);
    b = slice(xf, da, half, hd);
  } else {
    a = slice(xf, da, 0, hd, 2);
    b = slice(xf, da, 1, hd, 2);
  }
  // cos / sin laid along the sequence and head-dim axes of the halves.
  Tensor c = broadcast(cs.with_tags({Tag(), Tag()}), a.shape(), {sa, da});
  Tensor sv = broadcast(sn.with_tags({Tag(), Tag()}), a.shape(), {sa, da});
  Tensor ra = a * c - b * sv, rb = b * c + a * sv;
  Tensor y;
  if (opts.layout == RopeLayout::kHalfSplit) {
    y = concatenate({ra, rb}, da);
  } else {
    // [..., hd/2, 2, ...] then merged back: element 2j is ra[j], 2j+1 is rb[j].
    const Tag tag = x.shape().tag(da);
    y = merge_axes(stack({ra, rb}, da + 1, tag.empty() ? Tag() : Tag("rope_pair")), da, da + 1, tag);
  }
  return cd == x.dtype() ? y : convert(y, x.dtype());
}

}  // namespace radix::nn
