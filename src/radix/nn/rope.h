// Rotary position embedding (RoPE, Su et al. 2021).
//
// For a head vector x of even size hd at position p, pair (a, b) is rotated
// by the angle p * theta^(-2j / hd), j = 0 .. hd/2 - 1:
//   a' = a cos - b sin,   b' = b cos + a sin.
// The layouts differ in which elements form pair j:
//   kInterleaved: (x[2j], x[2j+1])      GPT-J, llama.cpp's "normal" mode
//   kHalfSplit:   (x[j], x[j + hd/2])   GPT-NeoX, Hugging Face Llama
// Angles are computed in f32 (positions exact below 2^24), as HF does; f16 /
// bf16 inputs are rotated in f32 and rounded once.
#pragma once

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix::nn {

enum class RopeLayout { kInterleaved, kHalfSplit };

struct RopeOptions {
  RopeLayout layout = RopeLayout::kHalfSplit;
  double theta = 10000.0;  // frequency base
  Axis seq_axis = -3;      // the token axis of x (index or tag)
  Axis head_dim_axis = -1; // the rotated axis (index or tag), even size
};

// x: [..., s, h, hd] by default (any float dtype; the axes are set in opts),
// returned with the same shape. positions: an integer tensor, either rank 0
// (an offset p: token i is at position p + i, so a decode step at position p
// passes s = 1 and p) or rank 1 of size s (each token's position).
Tensor rope(const Tensor& x, const Tensor& positions, const RopeOptions& opts = {});

// The rotation angles' cosines and sines, f32 [s, hd/2] each (row i:
// token i's position, column j: frequency theta^(-2j / hd)), for
// positions as rope() takes them. A model computes them once per forward
// and hands them to every layer: a layer traced as a cached callee would
// otherwise compute its own (s * hd libm sin / cos per call).
struct RopeTable {
  Tensor cos, sin;
};
// opts.theta sets the frequencies (the layout and axes play no part).
RopeTable rope_table(const Tensor& positions, int64_t s, int64_t head_dim, const RopeOptions& opts = {});

// rope(x, positions, opts) with the angles' cos / sin given: the table's
// [s, hd/2] must match x's sequence and head-dim axes.
Tensor rope(const Tensor& x, const RopeTable& table, const RopeOptions& opts = {});

}  // namespace radix::nn
