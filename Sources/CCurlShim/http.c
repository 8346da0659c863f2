#include "CCurlShim.h"
#include "common.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/err.h>

/* Whether an IPv4 address (host order) is one a webhook must not reach (RFC 6890 special-purpose
 * ranges that are not globally reachable, and multicast). */
static int v4_not_public(uint32_t a) {
    return (a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 || (a & 0xFFC00000u) == 0x64400000u   /* 100.64/10 */
        || (a & 0xFFFF0000u) == 0xA9FE0000u || (a & 0xFFF00000u) == 0xAC100000u || (a & 0xFFFF0000u) == 0xC0A80000u
        || (a & 0xFFFFFF00u) == 0xC0000000u || (a & 0xFFFE0000u) == 0xC6120000u || (a >> 28) >= 0xE;   /* 224/4, 240/4 */
}

static int not_public(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) return v4_not_public(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family != AF_INET6) return 1;
    const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };
    if (memcmp(b, mapped, 12) == 0) return v4_not_public(((uint32_t)b[12] << 24) | (b[13] << 16) | (b[14] << 8) | b[15]);
    int zero = 1;
    for (int i = 0; i < 15; i++) zero &= b[i] == 0;
    return (zero && (b[15] == 0 || b[15] == 1))                 /* ::, ::1 */
        || (b[0] & 0xFE) == 0xFC || (b[0] == 0xFE && (b[1] & 0xC0) == 0x80) || b[0] == 0xFF   /* fc00::/7, fe80::/10, ff00::/8 */
        || (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xFF && b[3] == 0x9B);                   /* 64:ff9b::/96 (NAT64) */
}

static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *address) {
    connect_guard *g = ud;
    (void)purpose;
    if (g->public_only && not_public(&address->addr)) { g->refused = 1; return CURL_SOCKET_BAD; }
    return socket(address->family, address->socktype, address->protocol);
}

static int on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port) {
    prereq_state *p = ud;
    (void)primary_ip; (void)local_ip; (void)primary_port; (void)local_port;
    const struct curl_tlssessioninfo *info = NULL;
    p->tls = 0;
    p->ssl = NULL;
    if (curl_easy_getinfo(p->h, CURLINFO_TLS_SSL_PTR, &info) == CURLE_OK && info && info->backend == CURLSSLBACKEND_OPENSSL
        && info->internals) {
        p->ssl = info->internals;
        p->tls = SSL_session_reused(p->ssl) ? 2 : 1;
    }
    return p->once && p->sends++ > 0 ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

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

typedef struct { long retry_after; long keep_alive; } header_state;

static long number_after(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p < end && isdigit((unsigned char)*p) ? strtol(p, NULL, 10) : -1;
}

static size_t on_header(char *ptr, size_t size, size_t n, void *ud) {
    header_state *h = ud;
    size_t len = size * n;
    if (len > 12 && strncasecmp(ptr, "retry-after:", 12) == 0) {
        long v = number_after(ptr + 12, ptr + len);
        if (v >= 0) h->retry_after = v;
    } else if (len > 11 && strncasecmp(ptr, "keep-alive:", 11) == 0) {
        /* RFC 9112 leaves it out, but servers that close idle connections early often say when:
         * `Keep-Alive: timeout=5, max=100`. */
        for (const char *p = ptr + 11; p + 8 <= ptr + len; p++) {
            if (strncasecmp(p, "timeout=", 8) == 0) { h->keep_alive = number_after(p + 8, ptr + len); break; }
        }
    }
    return len;
}

/* Whether no complete request ever left, and why the exchange failed, in generic words.
 * libcurl stamps PRETRANSFER when the request has been sent (entering its DID state) and adds
 * to it on each of its own retries, never leaving it 0 once stamped: 0 means the request never
 * got through (DNS, connect, TLS handshake, or the send itself failed). Only when that cannot
 * be read does the CURLcode decide, and then only the codes that precede any sending. */
void tb_classify(CURL *h, CURLcode rc, int *error, const char **reason) {
    curl_off_t pre = -1;
    int unsent;
    if (curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pre) == CURLE_OK) {
        unsent = pre == 0;
    } else {
        unsent = rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_COULDNT_CONNECT
              || rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE;
    }
    *error = unsent ? 1 : 2;
    if (unsent) {
        switch (rc) {
        case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY: *reason = "could not resolve host"; break;
        case CURLE_COULDNT_CONNECT: *reason = "connection refused"; break;
        case CURLE_OPERATION_TIMEDOUT: *reason = "timeout before the request was sent"; break;
        case CURLE_SSL_CONNECT_ERROR: *reason = "TLS handshake failed"; break;
        case CURLE_PEER_FAILED_VERIFICATION: {
            /* The server's certificate was refused: a trust or certificate problem that no retry
             * mends. OpenSSL's verification result names it (a static string). */
            long v = X509_V_OK;
            curl_easy_getinfo(h, CURLINFO_SSL_VERIFYRESULT, &v);
            *error = 4;
            *reason = v != X509_V_OK ? X509_verify_cert_error_string(v) : "the certificate does not match the host name";
            break;
        }
        case CURLE_SSL_CACERT_BADFILE: *error = 4; *reason = "the trusted CA certificates could not be loaded"; break;
        default: *reason = "connection failed before the request was sent"; break;
        }
    } else {
        switch (rc) {
        case CURLE_OPERATION_TIMEDOUT: *reason = "timeout after the request was sent"; break;
        case CURLE_GOT_NOTHING: *reason = "connection closed without an answer"; break;
        case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: *reason = "connection reset"; break;
        case CURLE_PARTIAL_FILE: *reason = "answer cut short"; break;
        default: *reason = "exchange failed after the request was sent"; break;
        }
    }
}

/* Each destination has a share of its own holding its TLS sessions and its DNS answers, which
 * every handle of that destination uses: a new connection resumes the host's session even when
 * it is made by a new handle, and a destination whose connections were all closed keeps its
 * session. (One share for all would do for DNS, but libcurl's shared session cache holds eight
 * sessions in all; a handle takes one share.) DNS answers are kept CURLOPT_DNS_CACHE_TIMEOUT,
 * 60 s: getaddrinfo reports no lifetime. */
static pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud) {
    (void)h; (void)access; (void)ud;
    pthread_mutex_lock(&share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud) {
    (void)h; (void)ud;
    pthread_mutex_unlock(&share_locks[data]);
}

static void global_init_once(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&share_locks[i], NULL);
}

/* Once per process, whichever client asks first (the IdP client, the proxy's transport). */
void tb_http_global_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, global_init_once);
}

void *tb_http_share_new(void) {
    CURLSH *share = curl_share_init();
    if (!share) return NULL;
    curl_share_setopt(share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    return share;
}

void tb_http_share_free(void *share) { if (share) curl_share_cleanup(share); }

void *tb_http_handle_new(void *share) {
    CURL *h = curl_easy_init();
    if (h && share) curl_easy_setopt(h, CURLOPT_SHARE, share);
    return h;
}

void tb_http_handle_free(void *handle) { if (handle) curl_easy_cleanup(handle); }

struct tb_http_trust {
    pthread_mutex_t lock;
    X509_STORE *store;   /* NULL until a bundle loaded */
};

tb_http_trust *tb_http_trust_new(void) {
    tb_http_trust *t = calloc(1, sizeof *t);
    if (t) pthread_mutex_init(&t->lock, NULL);
    return t;
}

int tb_http_trust_load(tb_http_trust *t, const char *path) {
    X509_STORE *store = X509_STORE_new();
    if (!store) return -1;
    if (X509_STORE_load_file(store, path) != 1) { X509_STORE_free(store); ERR_clear_error(); return -1; }
    int n = sk_X509_OBJECT_num(X509_STORE_get0_objects(store));
    if (n <= 0) { X509_STORE_free(store); return -1; }
    /* As libcurl sets up its own stores: the bundle's certificates are preferred when building a
     * chain, and any of them is an anchor (an intermediate listed in the bundle included). */
    X509_STORE_set_flags(store, X509_V_FLAG_TRUSTED_FIRST | X509_V_FLAG_PARTIAL_CHAIN);
    pthread_mutex_lock(&t->lock);
    X509_STORE *old = t->store;
    t->store = store;
    pthread_mutex_unlock(&t->lock);
    X509_STORE_free(old);
    return n;
}

void tb_http_trust_free(tb_http_trust *t) {
    if (!t) return;
    X509_STORE_free(t->store);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Called by libcurl for each new TLS connection, before its handshake, with the connection's own
 * SSL_CTX: idle connections give their read and write buffers back, and, unless the request
 * carries its own anchors, the shared store is put in place of the empty one libcurl made. */
static CURLcode on_ssl_ctx(CURL *curl, void *sslctx, void *ud) {
    SSL_CTX *ctx = sslctx;
    tb_http_trust *t = ud;
    (void)curl;
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (!t) return CURLE_OK;
    pthread_mutex_lock(&t->lock);
    X509_STORE *store = t->store;
    if (store) X509_STORE_up_ref(store);
    pthread_mutex_unlock(&t->lock);
    if (!store) return CURLE_SSL_CACERT_BADFILE;
    SSL_CTX_set_cert_store(ctx, store);   /* takes the reference */
    return CURLE_OK;
}

/* The options every exchange sets, after a reset that keeps the live connection, the TLS
 * session and the share: one URL, no signals, no redirect, HTTP(S) only, the two timeouts, the
 * address check, one connection per handle, the trust (the request's own anchors, or the
 * shared store), the header lines sent, and where the head and the body received go. */
void tb_set_common(CURL *h, const char *url, long connect_ms, long timeout_ms, long max_idle_s, tb_http_trust *trust,
                   const char *ca_pem, size_t ca_pem_len, connect_guard *guard, prereq_state *pre,
                   struct curl_slist *headers, curl_write_callback on_header, void *header_data,
                   curl_write_callback on_body, void *body_data) {
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, guard);
    curl_easy_setopt(h, CURLOPT_MAXCONNECTS, 1L);   /* the pool keeps one handle per connection */
    curl_easy_setopt(h, CURLOPT_MAXAGE_CONN, max_idle_s > 0 ? max_idle_s : 1L);
    /* Trust: the request's own anchors, or the shared store; never libcurl's per-connection
     * reading of the bundle. Peer and host name verification stay on (libcurl's defaults). */
    curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
    curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    if (ca_pem) {
        struct curl_blob blob = { (void *)ca_pem, ca_pem_len, CURL_BLOB_COPY };
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    }
    /* libcurl prepares the store after this callback (once the ClientHello is out) and, with its
     * CA cache on, would keep the first store it saw per handle and put it back on later
     * connections: a replaced CA file would never be used. Off, it only sets on the shared store
     * the two flags it already carries (TRUSTED_FIRST, PARTIAL_CHAIN): the same bits rewritten. */
    curl_easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
    curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, ca_pem ? NULL : trust);
    /* libcurl silently sends a request again on a new connection when a reused connection closes
     * without any answer (Curl_retry_request), or when an HTTP/2 stream is refused: the server
     * may well have processed the first copy. For a refresh-token grant that is a second
     * presentation of a token the IdP has just rotated, i.e. reuse detection and a revoked
     * family. With `once`, the prerequest guard refuses the second send (the exchange then
     * failed after the request was sent: unanswered), so these requests use kept connections
     * too. A connection the server closed while idle is seen closed before reuse. */
    curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(h, CURLOPT_PREREQDATA, pre);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, header_data);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body_data);
}

void tb_set_client_certificate(CURL *h, const char *cert, size_t cert_len, const char *key, size_t key_len) {
    if (!cert || !key) return;
    /* Copied by libcurl; part of the connection's TLS configuration, so a kept connection is
     * reused only by a request presenting the same certificate (the pool keys them apart too). */
    struct curl_blob c = { (void *)cert, cert_len, CURL_BLOB_COPY };
    struct curl_blob k = { (void *)key, key_len, CURL_BLOB_COPY };
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &c);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &k);
}

/* After a perform: whether it opened a new connection. A kept TLS connection would hold its
 * record buffers (about 34 KB) while idle: OpenSSL's SSL_MODE_RELEASE_BUFFERS frees them after
 * a read, but libcurl's last read, which meets EAGAIN, allocates them again. Freed here when the
 * connection is still kept (libcurl reports its socket only then) and nothing is pending in
 * them; the next request allocates them. */
int tb_after_perform(CURL *h, const prereq_state *pre) {
    curl_socket_t kept = CURL_SOCKET_BAD;
    if (pre->ssl && curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &kept) == CURLE_OK && kept != CURL_SOCKET_BAD)
        SSL_free_buffers(pre->ssl);
    long connects = 0;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
    return connects > 0;
}

tb_http_result tb_http_perform(void *handle, const tb_http_request *q) {
    tb_http_result r = { 0, 2, NULL, NULL, 0, -1, NULL, 0, 0, -1 };
    connect_guard guard = { q->public_only, 0 };
    CURL *h = handle;
    prereq_state pre = { h, q->once, 0, 0, NULL };
    header_state hs = { -1, -1 };
    buffer b = { NULL, 0, 0, q->max_bytes, 0 };
    struct curl_slist *list = NULL;
    for (int i = 0; i < q->nheaders; i++) list = curl_slist_append(list, q->headers[i]);
    list = curl_slist_append(list, "Expect:");   /* no 100-continue round trip */

    tb_set_common(h, q->url, q->timeout_ms, q->timeout_ms, q->max_idle_s, q->trust, q->ca_pem, q->ca_pem_len, &guard, &pre,
                  list, on_header, &hs, on_body, &b);
    tb_set_client_certificate(h, q->client_cert, q->client_cert_len, q->client_key, q->client_key_len);
    /* Every kept handle holds its receive buffer (16 KB by default) between requests; provider
     * answers are a few KB, and a thousand hosts mean a thousand kept handles. */
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 4096L);
    if (strcmp(q->method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    } else {
        /* POST with its body; another method (a provider's DELETE of a token) as POST renamed,
         * so that its body, when it has one, goes out the same way. */
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body ? q->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, strcmp(q->method, "POST") == 0 ? NULL : q->method);
    }
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(list);
    r.connected = tb_after_perform(h, &pre);
    r.tls = r.connected ? pre.tls : 0;
    r.retry_after = hs.retry_after;
    r.keep_alive = hs.keep_alive;
    if (rc == CURLE_ABORTED_BY_CALLBACK && pre.sends > 1) {
        r.error = 2;   /* the first copy went out on a connection that then died: it may have been acted on */
        r.reason = "connection closed without an answer";
    } else if (rc == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
        r.error = 0;
        struct curl_header *nonce = NULL;
        if (curl_easy_header(h, "DPoP-Nonce", 0, CURLH_HEADER, -1, &nonce) == CURLHE_OK && nonce && nonce->value
            && strlen(nonce->value) <= 512)
            r.dpop_nonce = strdup(nonce->value);
        struct curl_header *type = NULL;
        if (curl_easy_header(h, "Content-Type", 0, CURLH_HEADER, -1, &type) == CURLHE_OK && type && type->value
            && strlen(type->value) <= 256)
            r.content_type = strdup(type->value);
    } else if (b.over) {
        r.error = 3;
        r.reason = "response too large";
    } else {
        tb_classify(h, rc, &r.error, &r.reason);
        if (guard.refused) { r.error = 1; r.reason = "address is not public"; }
    }
    r.body = b.data;
    r.body_len = b.len;
    return r;
}

void tb_http_free(tb_http_result *result) {
    free(result->body);
    result->body = NULL;
    free(result->dpop_nonce);
    result->dpop_nonce = NULL;
    free(result->content_type);
    result->content_type = NULL;
}
