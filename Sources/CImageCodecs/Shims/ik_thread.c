#define _GNU_SOURCE
#include "ik_thread.h"

#include <pthread.h>

// pthread_setname_np needs _GNU_SOURCE, which Swift's Glibc module does not define.
void ik_thread_set_name(const char *name) {
    pthread_setname_np(pthread_self(), name);
}
