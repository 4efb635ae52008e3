// Waiting for this process's other threads to go idle before a timed loop.
#pragma once

namespace radix::tools {

struct QuietOptions {
  double step_s = 0.005;     // CPU time of the other threads is sampled this often
  double max_wait_s = 0.5;   // gives up (returns) after this long
  double busy_share = 0.1;   // above this share of one core over a step: still busy
  int quiet_steps = 2;       // consecutive idle steps that count as quiet
};

// Sleeps until the process's other threads (all but the caller) used at
// most busy_share of a core in each of quiet_steps consecutive steps, or
// max_wait_s passed. Returns the seconds waited.
//
// Why: a peer's thread pool can keep spinning after its call returns.
// OpenBLAS's workers spin for 2^28 TSC ticks (~0.13 s at 2.1 GHz) before
// they sleep, so whichever contender `radix bench` timed next on two threads
// shared a core with them: Radix's 4096^3 on two threads read 0.89x oneDNN
// when it ran right after OpenBLAS and 1.03x when it ran after oneDNN (same
// process, Zen 5, 2 cores).
double wait_until_quiet(const QuietOptions& options = {});

}  // namespace radix::tools
