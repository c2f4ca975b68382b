// Row helpers shared by the C pixel loops (not part of the module's interface).
#pragma once
#include <stdint.h>

// The AVX2 copies of the pixel loops: compiled with a target attribute, chosen at run time with
// ik_uses_avx2() (a package cannot raise the baseline with compiler flags).
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define IK_HAS_AVX2_DISPATCH 1
#define IK_AVX2 __attribute__((target("avx2")))
#else
#define IK_HAS_AVX2_DISPATCH 0
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))


/// Whether the pixel loops that have an AVX2 copy use it: the processor has AVX2 and
/// `ik_set_avx2_allowed(0)` has not been called.
int ik_uses_avx2(void);
