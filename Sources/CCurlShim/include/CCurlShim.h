#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <stddef.h>

/* One HTTP exchange on a reusable libcurl easy handle (curl_easy_setopt is C-variadic, which
 * Swift cannot call). The handle keeps its connections alive between calls; one thread uses it
 * at a time. Redirects are never followed; the body is capped at max_bytes. */
typedef struct tb_http_result {
    long status;            /* HTTP status, 0 when no response */
    int error;              /* 0 ok, 1 not sent (no complete request ever left), 2 unanswered (it
                               may have reached the server), 3 body over the cap */
    const char *reason;     /* static, generic (quotes nothing received); NULL when ok */
    char *body;             /* malloc'd, body_len bytes (+ NUL); free with tb_http_free */
    size_t body_len;
    long retry_after;       /* Retry-After in seconds, -1 when absent or not in seconds */
    char *dpop_nonce;       /* malloc'd DPoP-Nonce header value (RFC 9449 §8), NULL when absent or over 512 bytes */
} tb_http_result;

void tb_http_global_init(void);
void *tb_http_handle_new(void);
void tb_http_handle_free(void *handle);
/* method "GET" or "POST"; headers: n "Name: value" strings; body may be NULL for GET. timeout_ms
 * bounds the whole exchange and the connect. once != 0: the request is sent at most once, never
 * re-sent by libcurl on a new connection (see http.c for why a refresh-token grant wants that). public_only != 0: refuses to connect to
 * an address that is not public (loopback, private, link-local, shared, multicast, reserved —
 * checked on the very address libcurl connects to, so a DNS answer cannot change it after a
 * check), reason "address is not public". */
tb_http_result tb_http_perform(void *handle, const char *method, const char *url, const char *const *headers, int nheaders,
                               const char *body, size_t body_len, long timeout_ms, size_t max_bytes, int once, int public_only,
                               const char *ca_file);
void tb_http_free(tb_http_result *result);
#endif
