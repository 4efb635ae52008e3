// Attention masks: bool [q, k], true where query i may attend to key j.
// Query i sits at absolute position offset + i (a decode step at position p
// passes q = 1, offset = p); key j is at position j. Tags default to the
// attention layer's ("s" for queries, "t" for keys).
#pragma once

#include <cstdint>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix::nn {

// Causal: j <= offset + i.
Tensor causal_mask(int64_t q, int64_t k, int64_t offset = 0, Tag q_tag = "s", Tag k_tag = "t");
// Sliding window of `window` keys (Mistral): offset + i - window < j <= offset + i.
Tensor sliding_window_mask(int64_t q, int64_t k, int64_t window, int64_t offset = 0, Tag q_tag = "s",
                           Tag k_tag = "t");
// The same with a run-time offset (a rank-0 integer tensor), for KV-cache
// decoding; window = 0 means no window (plain causal).
Tensor causal_mask(int64_t q, int64_t k, const Tensor& offset, int64_t window = 0, Tag q_tag = "s",
                   Tag k_tag = "t");

}  // namespace radix::nn
