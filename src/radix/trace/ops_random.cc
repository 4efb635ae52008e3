#include "radix/trace/ops_random.h"

namespace radix {}  // namespace radix
