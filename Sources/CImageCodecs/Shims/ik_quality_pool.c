// Buffers kept between quality searches (see ik_quality_internal.h).
#include "ik_quality_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

// A search prepares one reference and compares a few encodings against it: some 60 bytes a pixel
// which, fresh from the kernel each time, cost as much in page faults as the comparisons. Freed
// buffers are kept for the next reference, up to POOL_BYTES_PER_CORE per core (at most 8 cores).
#define POOL_SLOTS 8
#define POOL_BYTES_PER_CORE ((size_t)32 << 20)

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    float *data;
    size_t floats;
} pool[POOL_SLOTS];

static size_t pool_limit_floats(void) {
    static size_t limit;
    size_t known = __atomic_load_n(&limit, __ATOMIC_RELAXED);
    if (known) return known;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (cores > 8) cores = 8;
    known = POOL_BYTES_PER_CORE * (size_t)cores / sizeof(float);
    __atomic_store_n(&limit, known, __ATOMIC_RELAXED);
    return known;
}

float *ik_quality_buffer_take(size_t floats, size_t *got) {
    pthread_mutex_lock(&pool_lock);
    int best = -1;
    for (int i = 0; i < POOL_SLOTS; i++) {
        if (pool[i].data && pool[i].floats >= floats && (best < 0 || pool[i].floats < pool[best].floats)) best = i;
    }
    if (best >= 0) {
        float *data = pool[best].data;
        *got = pool[best].floats;
        pool[best].data = NULL;
        pthread_mutex_unlock(&pool_lock);
        return data;
    }
    pthread_mutex_unlock(&pool_lock);
    *got = floats;
    return malloc(sizeof(float) * floats);
}

void ik_quality_buffer_give(float *data, size_t floats) {
    if (!data) return;
    size_t limit = pool_limit_floats();
    pthread_mutex_lock(&pool_lock);
    size_t kept = 0;
    int empty = -1, smallest = -1;
    for (int i = 0; i < POOL_SLOTS; i++) {
        if (!pool[i].data) {
            if (empty < 0) empty = i;
            continue;
        }
        kept += pool[i].floats;
        if (smallest < 0 || pool[i].floats < pool[smallest].floats) smallest = i;
    }
    float *discard = data;
    if (floats <= limit) {
        if (empty < 0 && smallest >= 0 && pool[smallest].floats < floats) {
            // Full: a larger buffer serves more requests than a smaller one.
            discard = pool[smallest].data;
            kept -= pool[smallest].floats;
            pool[smallest].data = NULL;
            empty = smallest;
        }
        while (empty >= 0 && kept + floats > limit && smallest >= 0 && pool[smallest].data) {
            // Over the limit: drop kept buffers, smallest first, while that makes room.
            float *dropped = pool[smallest].data;
            kept -= pool[smallest].floats;
            pool[smallest].data = NULL;
            free(dropped);
            smallest = -1;
            for (int i = 0; i < POOL_SLOTS; i++) {
                if (pool[i].data && (smallest < 0 || pool[i].floats < pool[smallest].floats)) smallest = i;
            }
        }
        if (empty >= 0 && kept + floats <= limit) {
            pool[empty].data = data;
            pool[empty].floats = floats;
            if (discard == data) discard = NULL;
        }
    }
    pthread_mutex_unlock(&pool_lock);
    free(discard);
}
