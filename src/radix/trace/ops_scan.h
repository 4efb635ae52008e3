// scan ops (see ops.h for the conventions every op follows); included from ops.h.
#pragma once

#include "radix/trace/tensor.h"

namespace radix {}  // namespace radix
