#include "radix/nn/check.h"

#include "radix/trace/ops.h"

namespace radix::nn::detail {

Tensor as_dtype(const Tensor& x, DType d) { return x.dtype() == d ? x : convert(x, d); }

}  // namespace radix::nn::detail
