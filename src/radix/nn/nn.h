// The nn layers: pure functions of tensors (umbrella header, filled by the nn work).
#pragma once

#include "radix/trace/ops.h"
