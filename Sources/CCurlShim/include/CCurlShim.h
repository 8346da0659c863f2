#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <stddef.h>

/* One HTTP exchange on a reusable libcurl easy handle (curl_easy_setopt is C-variadic, which
 * Swift cannot call). A handle keeps one connection alive between calls, and shares the TLS
 * sessions of its destination with the destination's other handles; one thread uses it at a time. Redirects are never followed; the body
 * is capped at max_bytes. */
typedef struct tb_http_result {
    long status;            /* HTTP status, 0 when no response */
    int error;              /* 0 ok, 1 not sent (no complete request ever left), 2 unanswered (it
                               may have reached the server), 3 body over the cap, 4 not sent because
                               the server's certificate was refused (reason says why) */
    const char *reason;     /* static, generic (quotes nothing received); NULL when ok */
    char *body;             /* malloc'd, body_len bytes (+ NUL); free with tb_http_free */
    size_t body_len;
    long retry_after;       /* Retry-After in seconds, -1 when absent or not in seconds */
    char *dpop_nonce;       /* malloc'd DPoP-Nonce header value (RFC 9449 §8), NULL when absent or over 512 bytes */
    int connected;          /* 1: a new connection was opened for this exchange; 0: a kept one was reused */
    int tls;                /* handshake of the new connection: 0 none (plain HTTP or reused), 1 full, 2 resumed */
    long keep_alive;        /* the server's Keep-Alive timeout in seconds, -1 when it sent none */
    char *content_type;     /* malloc'd Content-Type header value, NULL when absent or over 256 bytes */
} tb_http_result;

/* The CA certificates trusted by default, parsed once into one OpenSSL X509_STORE shared by
 * every connection (libcurl would otherwise parse the whole bundle for each new connection). */
typedef struct tb_http_trust tb_http_trust;

typedef struct tb_http_request {
    const char *method;     /* "GET", "POST", or another method (sent with the body when there is one) */
    const char *url;
    const char *const *headers;   /* nheaders "Name: value" strings */
    int nheaders;
    const char *body;       /* NULL for GET */
    size_t body_len;
    long timeout_ms;        /* bounds the whole exchange and the connect */
    size_t max_bytes;
    int once;               /* != 0: sent at most once, never re-sent by libcurl (see http.c) */
    int public_only;        /* != 0: only public addresses, checked on the address connected to */
    tb_http_trust *trust;   /* the shared store, used when ca_pem is NULL (NULL: libcurl's default) */
    const char *ca_pem;     /* a client's own trust anchors (PEM), replacing the shared store */
    size_t ca_pem_len;
    long max_idle_s;        /* a kept connection idle longer than this is not reused */
    const char *client_cert;   /* the client certificate chain presented (PEM, leaf first), NULL: none (RFC 8705) */
    size_t client_cert_len;
    const char *client_key;    /* its private key (PEM), with client_cert */
    size_t client_key_len;
} tb_http_request;

void tb_http_global_init(void);
/* A destination's TLS sessions and DNS answers, shared by its handles; freed after them. */
void *tb_http_share_new(void);
void tb_http_share_free(void *share);
void *tb_http_handle_new(void *share);
void tb_http_handle_free(void *handle);
tb_http_result tb_http_perform(void *handle, const tb_http_request *request);
void tb_http_free(tb_http_result *result);

/* One streamed HTTP exchange (the outbound proxy): the request body is pulled from `read_body`,
 * the response head handed to `head` once, before any body byte, and the body pushed into
 * `body` as it arrives; nothing is held whole. Interim (1xx) heads are skipped. The bytes pass
 * as the upstream sent them (no Accept-Encoding, no decoding); libcurl adds no Accept and no
 * Expect of its own; no redirect is followed. */
typedef struct tb_http_header {
    const char *name;
    size_t name_len;
    const char *value;       /* without the surrounding blanks */
    size_t value_len;
} tb_http_header;

typedef struct tb_http_stream_callbacks {
    void *context;
    /* Copies up to len bytes of the request body into buf: the count, 0 at its end, -1 when the
     * body was abandoned (the exchange then fails). */
    long (*read_body)(void *context, char *buf, size_t len);
    /* The final head: status and every header line in order (repeated ones included). Returns
     * 1 to take the body, 0 to drop it. The pointers live only during the call. */
    int (*head)(void *context, long status, const tb_http_header *headers, int nheaders);
    /* A piece of the body. Returns 1 to go on, 0 to abort the exchange (the reader is gone). */
    int (*body)(void *context, const char *data, size_t len);
} tb_http_stream_callbacks;

typedef struct tb_http_stream_request {
    const char *method;      /* sent as given; HEAD expects no body */
    const char *url;
    const char *const *headers;   /* nheaders "Name: value" strings, sent as they are */
    int nheaders;
    int has_body;            /* != 0: read_body supplies a body */
    long long body_len;      /* its length, -1 unknown (sent chunked over HTTP/1.1) */
    long connect_timeout_ms; /* bounds the TCP and TLS connect */
    long timeout_ms;         /* bounds the whole exchange, the body included */
    long long max_bytes;     /* a longer response body is cut off */
    int once;                /* != 0: sent at most once, never re-sent by libcurl */
    int public_only;         /* != 0: only public addresses, checked on the address connected to */
    tb_http_trust *trust;    /* the shared store (NULL: libcurl's default) */
    long max_idle_s;         /* a kept connection idle longer than this is not reused */
    const char *client_cert; /* the client certificate chain presented (PEM, leaf first), NULL: none (RFC 8705) */
    size_t client_cert_len;
    const char *client_key;  /* its private key (PEM), with client_cert */
    size_t client_key_len;
} tb_http_stream_request;

typedef struct tb_http_stream_result {
    int error;               /* 0 ok; 1 not sent; 2 unanswered; 3 body over max_bytes; 4 not sent,
                                certificate refused; 5 not sent, the address is not public;
                                6 the request body was abandoned; 7 the body's reader went away */
    const char *reason;      /* static, generic; NULL when ok */
    int head_delivered;      /* 1: `head` was called (the body's end is then error == 0) */
    int connected;           /* 1: a new connection was opened for this exchange */
} tb_http_stream_result;

tb_http_stream_result tb_http_stream(void *handle, const tb_http_stream_request *request,
                                     const tb_http_stream_callbacks *callbacks);

tb_http_trust *tb_http_trust_new(void);
/* Parses a PEM bundle into a new store and puts it in place of the current one (connections
 * already made keep theirs). Returns the number of certificates, or -1 when the file cannot be
 * read or holds none (the current store stays). */
int tb_http_trust_load(tb_http_trust *trust, const char *path);
void tb_http_trust_free(tb_http_trust *trust);
#endif
