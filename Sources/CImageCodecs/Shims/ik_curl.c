#include "ik_curl.h"

#include <curl/curl.h>

// curl's setters are variadic; Swift cannot call them, so each argument type gets one wrapper.

int ik_curl_easy_setopt_long(void *easy, int option, long value) {
    return (int)curl_easy_setopt((CURL *)easy, (CURLoption)option, value);
}

int ik_curl_easy_setopt_pointer(void *easy, int option, const void *value) {
    return (int)curl_easy_setopt((CURL *)easy, (CURLoption)option, value);
}

int ik_curl_easy_setopt_offset(void *easy, int option, int64_t value) {
    return (int)curl_easy_setopt((CURL *)easy, (CURLoption)option, (curl_off_t)value);
}

int ik_curl_easy_getinfo_long(void *easy, int info, long *value) {
    return (int)curl_easy_getinfo((CURL *)easy, (CURLINFO)info, value);
}

int ik_curl_easy_getinfo_double(void *easy, int info, double *value) {
    return (int)curl_easy_getinfo((CURL *)easy, (CURLINFO)info, value);
}

int ik_curl_easy_getinfo_offset(void *easy, int info, int64_t *value) {
    curl_off_t result = 0;
    int code = (int)curl_easy_getinfo((CURL *)easy, (CURLINFO)info, &result);
    *value = (int64_t)result;
    return code;
}

int ik_curl_easy_getinfo_string(void *easy, int info, const char **value) {
    return (int)curl_easy_getinfo((CURL *)easy, (CURLINFO)info, value);
}

int ik_curl_multi_setopt_long(void *multi, int option, long value) {
    return (int)curl_multi_setopt((CURLM *)multi, (CURLMoption)option, value);
}

int ik_curl_easy_set_write_function(void *easy, ik_curl_data_fn function) {
    return (int)curl_easy_setopt((CURL *)easy, CURLOPT_WRITEFUNCTION, function);
}

int ik_curl_easy_set_header_function(void *easy, ik_curl_data_fn function) {
    return (int)curl_easy_setopt((CURL *)easy, CURLOPT_HEADERFUNCTION, function);
}

int ik_curl_easy_set_xferinfo_function(void *easy, ik_curl_xferinfo_fn function) {
    return (int)curl_easy_setopt((CURL *)easy, CURLOPT_XFERINFOFUNCTION, function);
}

int ik_curl_easy_set_opensocket_function(void *easy, ik_curl_opensocket_fn function) {
    // Same ABI: curlsocktype is an int-sized enum, curl_socket_t an int on POSIX.
    return (int)curl_easy_setopt((CURL *)easy, CURLOPT_OPENSOCKETFUNCTION, (curl_opensocket_callback)function);
}


// A share handle used by several engine threads: curl serialises access through these
// callbacks, one mutex per kind of shared data.
#include <pthread.h>
#include <stdlib.h>

struct ik_curl_share {
    CURLSH *share;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
};

static void ik_share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *user) {
    (void)handle; (void)access;
    pthread_mutex_lock(&((struct ik_curl_share *)user)->locks[data]);
}

static void ik_share_unlock(CURL *handle, curl_lock_data data, void *user) {
    (void)handle;
    pthread_mutex_unlock(&((struct ik_curl_share *)user)->locks[data]);
}

ik_curl_share *ik_curl_share_create(int share_cookies) {
    ik_curl_share *shared = calloc(1, sizeof(ik_curl_share));
    if (!shared) return NULL;
    shared->share = curl_share_init();
    if (!shared->share) {
        free(shared);
        return NULL;
    }
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&shared->locks[i], NULL);
    curl_share_setopt(shared->share, CURLSHOPT_USERDATA, shared);
    curl_share_setopt(shared->share, CURLSHOPT_LOCKFUNC, ik_share_lock);
    curl_share_setopt(shared->share, CURLSHOPT_UNLOCKFUNC, ik_share_unlock);
    curl_share_setopt(shared->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(shared->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    if (share_cookies) curl_share_setopt(shared->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE);
    return shared;
}

void *ik_curl_share_handle(ik_curl_share *shared) {
    return shared->share;
}

void ik_curl_share_destroy(ik_curl_share *shared) {
    if (!shared) return;
    curl_share_cleanup(shared->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&shared->locks[i]);
    free(shared);
}
