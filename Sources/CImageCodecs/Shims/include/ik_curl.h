// curl: typed setters and getters for its variadic calls, the share handle, callbacks.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Typed wrappers over the variadic `curl_easy_setopt` / `curl_easy_getinfo` / `curl_multi_setopt`.
/// Handles are passed as untyped pointers; the return value is the CURLcode / CURLMcode.
int ik_curl_easy_setopt_long(void *_Nonnull easy, int option, long value);
int ik_curl_easy_setopt_pointer(void *_Nonnull easy, int option, const void *_Nullable value);
int ik_curl_easy_setopt_offset(void *_Nonnull easy, int option, int64_t value);
int ik_curl_easy_getinfo_long(void *_Nonnull easy, int info, long *_Nonnull value);
int ik_curl_easy_getinfo_double(void *_Nonnull easy, int info, double *_Nonnull value);
int ik_curl_easy_getinfo_offset(void *_Nonnull easy, int info, int64_t *_Nonnull value);
int ik_curl_easy_getinfo_string(void *_Nonnull easy, int info, const char *_Nullable *_Nonnull value);
int ik_curl_multi_setopt_long(void *_Nonnull multi, int option, long value);

/// A curl share handle (TLS sessions, DNS and optionally cookies) that several threads' multi
/// handles may use at once: locking callbacks with one mutex per kind of data. Destroy it after
/// every easy handle that used it is cleaned up.
typedef struct ik_curl_share ik_curl_share;
ik_curl_share *_Nullable ik_curl_share_create(int share_cookies);
void *_Nonnull ik_curl_share_handle(ik_curl_share *_Nonnull shared);
void ik_curl_share_destroy(ik_curl_share *_Nullable shared);

/// Callback setters, typed so Swift never casts a function to a data pointer.
typedef size_t (*ik_curl_data_fn)(char *_Nullable data, size_t size, size_t count, void *_Nullable context);
typedef int (*ik_curl_xferinfo_fn)(void *_Nullable context, int64_t total, int64_t now, int64_t upload_total, int64_t upload_now);
int ik_curl_easy_set_write_function(void *_Nonnull easy, ik_curl_data_fn _Nonnull function);
int ik_curl_easy_set_header_function(void *_Nonnull easy, ik_curl_data_fn _Nonnull function);
int ik_curl_easy_set_xferinfo_function(void *_Nonnull easy, ik_curl_xferinfo_fn _Nonnull function);
/// `CURLOPT_OPENSOCKETFUNCTION`: the address policy's check before each connect.
/// The callback gets the `CURLOPT_OPENSOCKETDATA` pointer, the `curlsocktype` and a
/// `struct curl_sockaddr *`; it returns a socket or -1 (`CURL_SOCKET_BAD`) to refuse.
typedef int (*ik_curl_opensocket_fn)(void *_Nullable context, int purpose, void *_Nullable address);
int ik_curl_easy_set_opensocket_function(void *_Nonnull easy, ik_curl_opensocket_fn _Nonnull function);

#ifdef __cplusplus
}
#endif
