#include "radix/trace/ops_conv.h"

namespace radix {}  // namespace radix
