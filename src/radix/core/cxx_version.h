// Radix's public headers need C++20 (std::span, concepts, designated
// initializers). Included first by every root header, so a build at an older
// language level stops with this message instead of errors deep in a header.
#pragma once

#if defined(_MSVC_LANG)
#define RADIX_CPLUSPLUS _MSVC_LANG
#else
#define RADIX_CPLUSPLUS __cplusplus
#endif

#if RADIX_CPLUSPLUS < 202002L
#error "Radix needs C++20: compile with -std=c++20 (or newer), or set CMAKE_CXX_STANDARD 20"
#endif
