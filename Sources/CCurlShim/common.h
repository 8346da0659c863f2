#ifndef CCURL_SHIM_COMMON_H
#define CCURL_SHIM_COMMON_H
/* What the buffered exchange (http.c) and the streamed one (stream.c) share; not part of the
 * shim's interface. */
#include <curl/curl.h>
#include <openssl/ssl.h>
#include "CCurlShim.h"

/* The public-address check of one perform (CURLOPT_OPENSOCKETFUNCTION): with `public_only`,
 * a socket to an address that is not public is never opened, and `refused` says so. */
typedef struct { int public_only; int refused; } connect_guard;

/* What one perform learns right before each request goes out (CURLOPT_PREREQFUNCTION, libcurl
 * 7.80: called on a new or a reused connection once it is ready, TLS included): how many
 * requests it was about to send, and whether the connection's TLS handshake resumed a session.
 * With `once`, any request after the first is refused before it is sent. */
typedef struct { CURL *h; int once; int sends; int tls; SSL *ssl; } prereq_state;

__attribute__((visibility("hidden")))
void tb_set_common(CURL *h, const char *url, long connect_ms, long timeout_ms, long max_idle_s, tb_http_trust *trust,
                   const char *ca_pem, size_t ca_pem_len, connect_guard *guard, prereq_state *pre,
                   struct curl_slist *headers, curl_write_callback on_header, void *header_data,
                   curl_write_callback on_body, void *body_data);
/* The client certificate chain and key (PEM) presented when the server asks (RFC 8705 mutual
 * TLS); nothing when cert is NULL. Call after tb_set_common (its reset clears them). */
__attribute__((visibility("hidden")))
void tb_set_client_certificate(CURL *h, const char *cert, size_t cert_len, const char *key, size_t key_len);
__attribute__((visibility("hidden")))
int tb_after_perform(CURL *h, const prereq_state *pre);
/* error 1 (not sent), 2 (unanswered) or 4 (certificate refused), and a static generic reason. */
__attribute__((visibility("hidden")))
void tb_classify(CURL *h, CURLcode rc, int *error, const char **reason);
#endif
