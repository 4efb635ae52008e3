#include "radix/trace/ops_scatter.h"

namespace radix {}  // namespace radix
