// Compiled at -std=c++17 by the `CxxVersion.RefusedBelowCxx20` test: it must
// stop with Radix's own "needs C++20" error, not an error deep in a header.
#include "radix/radix.h"
int main() { return 0; }
