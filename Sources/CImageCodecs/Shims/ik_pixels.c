#include "ik_pixel_loops.h"
#include "ik_pixels.h"

void ik_premultiply_row(const uint8_t *row, uint8_t *out, int count) {
    for (int x = 0; x < count; x++) {
        const uint8_t *p = row + 4 * x;
        uint8_t *q = out + 4 * x;
        uint32_t alpha = p[3];
        for (int c = 0; c < 3; c++) {
            uint32_t product = p[c] * alpha + 128;
            q[c] = (uint8_t)((product + (product >> 8)) >> 8);
        }
        q[3] = (uint8_t)alpha;
    }
}

/// 255 × 65536 / a, rounded, for a = 1…255 (index 0 unused).
static const uint32_t *reciprocals(void) {
    static uint32_t table[256];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        // Idempotent: racing threads write the same values.
        for (uint32_t a = 1; a < 256; a++) __atomic_store_n(&table[a], (255u * 65536u + a / 2) / a, __ATOMIC_RELAXED);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return table;
}

void ik_unpremultiply_row(uint8_t *row, int count) {
    const uint32_t *reciprocal = reciprocals();
    for (int x = 0; x < count; x++) {
        uint8_t *p = row + 4 * x;
        uint32_t alpha = p[3];
        if (alpha == 255) continue;
        if (alpha == 0) {
            p[0] = p[1] = p[2] = 0;
            continue;
        }
        uint32_t r = __atomic_load_n(&reciprocal[alpha], __ATOMIC_RELAXED);
        for (int c = 0; c < 3; c++) {
            uint32_t value = (p[c] * r + 32768) >> 16;
            p[c] = (uint8_t)(value > 255 ? 255 : value);
        }
    }
}

// -1: not yet asked; 0 or 1 otherwise. A test may force 0 to run the SSE2 loops.
static int avx2_state = -1;

int ik_uses_avx2(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    int value = __atomic_load_n(&avx2_state, __ATOMIC_RELAXED);
    if (value < 0) {
        __builtin_cpu_init();
        value = __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&avx2_state, value, __ATOMIC_RELAXED);
    }
    return value;
#else
    return 0;
#endif
}

void ik_set_avx2_allowed(int allowed) {
    if (allowed) {
        __atomic_store_n(&avx2_state, -1, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&avx2_state, 0, __ATOMIC_RELAXED);
    }
}
