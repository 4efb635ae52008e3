// The nn layers: pure functions of tensors (umbrella header). Each layer
// documents the tagged shapes it takes and returns; misuse throws TraceError
// naming the layer and every operand shape.
#pragma once

#include "radix/trace/ops.h"

#include "radix/nn/activation.h"
#include "radix/nn/attention.h"
#include "radix/nn/conv_block.h"
#include "radix/nn/linear.h"
#include "radix/nn/mask.h"
#include "radix/nn/mlp.h"
#include "radix/nn/norm.h"
#include "radix/nn/rope.h"
#include "radix/nn/sampler.h"
