#include "CCurlShim.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

typedef struct { char *data; size_t len, cap, max; int over; } buffer;

static size_t on_body(char *ptr, size_t size, size_t n, void *ud) {
    buffer *b = ud;
    size_t add = size * n;
    if (b->len + add > b->max) { b->over = 1; return 0; }
    if (b->len + add + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + add + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return 0;
        b->data = d; b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, add);
    b->len += add;
    b->data[b->len] = 0;
    return add;
}

static size_t on_header(char *ptr, size_t size, size_t n, void *ud) {
    long *retry_after = ud;
    size_t len = size * n;
    if (len > 12 && strncasecmp(ptr, "retry-after:", 12) == 0) {
        const char *p = ptr + 12;
        while (p < ptr + len && (*p == ' ' || *p == '\t')) p++;
        if (p < ptr + len && isdigit((unsigned char)*p)) *retry_after = strtol(p, NULL, 10);
    }
    return len;
}

void tb_http_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void *tb_http_handle_new(void) { return curl_easy_init(); }

void tb_http_handle_free(void *handle) { if (handle) curl_easy_cleanup(handle); }

tb_http_result tb_http_perform(void *handle, const char *method, const char *url, const char *const *headers, int nheaders,
                               const char *body, size_t body_len, long timeout_ms, size_t max_bytes) {
    tb_http_result r = { 0, 1, NULL, 0, -1 };
    CURL *h = handle;
    buffer b = { NULL, 0, 0, max_bytes, 0 };
    struct curl_slist *list = NULL;
    for (int i = 0; i < nheaders; i++) list = curl_slist_append(list, headers[i]);
    list = curl_slist_append(list, "Expect:");   /* no 100-continue round trip */

    curl_easy_reset(h);   /* keeps live connections, clears options */
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &r.retry_after);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(list);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
        r.error = 0;
    } else if (b.over) {
        r.error = 3;
    } else {
        r.error = rc == CURLE_OPERATION_TIMEDOUT ? 2 : 1;
    }
    r.body = b.data;
    r.body_len = b.len;
    return r;
}

void tb_http_free(tb_http_result *result) {
    free(result->body);
    result->body = NULL;
}
