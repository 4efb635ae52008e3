// RADIX_TLS_IE: initial-exec TLS for the CPU backend's per-thread state on
// hot paths (the JIT heap's caches, the fork / join pool's share indices).
// Such a variable is read at a fixed offset from the thread pointer, not
// through a __tls_get_addr call per access; libradix's few bytes of it fit
// glibc's static TLS reserve even when the library is dlopen'ed.
// Spelling: `thread_local T name RADIX_TLS_IE = init;`
#pragma once

#define RADIX_TLS_IE __attribute__((tls_model("initial-exec")))
