// Umbrella header: everything a Radix user needs.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include "radix/api/call.h"
#include "radix/api/compile.h"
#include "radix/api/control_flow.h"
#include "radix/api/ffi_binding.h"
#include "radix/api/visit.h"
#include "radix/core/dtype.h"
#include "radix/core/half.h"
#include "radix/core/mesh.h"
#include "radix/core/shape.h"
#include "radix/core/status.h"
#include "radix/nn/nn.h"
#include "radix/runtime/buffer.h"
#include "radix/runtime/distributed.h"
#include "radix/runtime/executable.h"
#include "radix/runtime/ffi_registry.h"
#include "radix/runtime/platform.h"
#include "radix/runtime/profiler.h"
#include "radix/runtime/sharding.h"
#include "radix/trace/compilation_context.h"
#include "radix/trace/ops.h"
#include "radix/trace/tensor.h"
#include "radix/trace/trace_error.h"
