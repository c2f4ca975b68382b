#include "ik_shims.h"

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

int ik_curl_share_setopt_long(void *share, int option, long value) {
    return (int)curl_share_setopt((CURLSH *)share, (CURLSHoption)option, value);
}
