// Token sampling from logits [..., v] (the vocabulary axis is `axis`, index
// or tag; default the last): greedy, or temperature / top-k / top-p
// filtering followed by a categorical draw with ops_random.h's generator.
// Explicit state in, tokens and the advanced state out; the same state gives
// the same tokens.
#pragma once

#include <cstdint>

#include "radix/core/shape.h"
#include "radix/trace/ops_random.h"
#include "radix/trace/tensor.h"

namespace radix::nn {

struct SamplerOptions {
  // Logits are divided by it; 0 means greedy (the state comes back unchanged).
  double temperature = 1.0;
  // Keep the k most likely tokens (0 = all). Ties with the k-th logit are
  // kept too, so more than k may remain when logits tie.
  int64_t top_k = 0;
  // Nucleus: keep the smallest set of most likely tokens whose probability
  // (after temperature and top-k) is >= top_p; 1 = all. Tokens tying with the
  // least likely kept one are kept too.
  double top_p = 1.0;
};

// argmax over the vocabulary axis: i32 tokens of logits' shape without it.
Tensor greedy(const Tensor& logits, const Axis& axis = -1);

// The filtered logits (f32; filtered-out entries are -inf), logits' shape.
Tensor filter_logits(const Tensor& logits, const SamplerOptions& opts, const Axis& axis = -1);

// samples: i32 tokens [...] (logits' shape without the axis); state: the
// next RNG state (u32[4], see rng_state_shape()).
RandomResult<> sample(const Tensor& state, const Tensor& logits, const SamplerOptions& opts = {},
                      const Axis& axis = -1);

}  // namespace radix::nn
