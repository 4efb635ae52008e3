#include "radix/trace/ops_scan.h"

namespace radix {}  // namespace radix
