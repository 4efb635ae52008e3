#include "radix/trace/ops_sort.h"

namespace radix {}  // namespace radix
