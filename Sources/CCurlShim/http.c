#include "CCurlShim.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

typedef struct { int public_only; int refused; } connect_guard;

static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *address) {
    connect_guard *g = ud;
    (void)purpose;
    if (g->public_only && not_public(&address->addr)) { g->refused = 1; return CURL_SOCKET_BAD; }
    return socket(address->family, address->socktype, address->protocol);
}

/* Counts the requests libcurl is about to send in one perform (CURLOPT_PREREQFUNCTION, libcurl
 * 7.80: called right before each request goes out, on a new or a reused connection) and
 * refuses any after the first before it is sent. */
static int on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port) {
    int *sends = ud;
    (void)primary_ip; (void)local_ip; (void)primary_port; (void)local_port;
    return (*sends)++ > 0 ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
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

/* Whether no complete request ever left, and why the exchange failed, in generic words.
 * libcurl stamps PRETRANSFER when the request has been sent (entering its DID state) and adds
 * to it on each of its own retries, never leaving it 0 once stamped: 0 means the request never
 * got through (DNS, connect, TLS handshake, or the send itself failed). Only when that cannot
 * be read does the CURLcode decide, and then only the codes that precede any sending. */
static void classify(CURL *h, CURLcode rc, tb_http_result *r) {
    curl_off_t pre = -1;
    int unsent;
    if (curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pre) == CURLE_OK) {
        unsent = pre == 0;
    } else {
        unsent = rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_COULDNT_CONNECT
              || rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION;
    }
    r->error = unsent ? 1 : 2;
    if (unsent) {
        switch (rc) {
        case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY: r->reason = "could not resolve host"; break;
        case CURLE_COULDNT_CONNECT: r->reason = "connection refused"; break;
        case CURLE_OPERATION_TIMEDOUT: r->reason = "timeout before the request was sent"; break;
        case CURLE_SSL_CONNECT_ERROR: case CURLE_PEER_FAILED_VERIFICATION: r->reason = "TLS handshake failed"; break;
        default: r->reason = "connection failed before the request was sent"; break;
        }
    } else {
        switch (rc) {
        case CURLE_OPERATION_TIMEDOUT: r->reason = "timeout after the request was sent"; break;
        case CURLE_GOT_NOTHING: r->reason = "connection closed without an answer"; break;
        case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: r->reason = "connection reset"; break;
        case CURLE_PARTIAL_FILE: r->reason = "answer cut short"; break;
        default: r->reason = "exchange failed after the request was sent"; break;
        }
    }
}

void tb_http_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void *tb_http_handle_new(void) { return curl_easy_init(); }

void tb_http_handle_free(void *handle) { if (handle) curl_easy_cleanup(handle); }

tb_http_result tb_http_perform(void *handle, const char *method, const char *url, const char *const *headers, int nheaders,
                               const char *body, size_t body_len, long timeout_ms, size_t max_bytes, int once, int public_only,
                               const char *ca_file) {
    tb_http_result r = { 0, 2, NULL, NULL, 0, -1, NULL };
    connect_guard guard = { public_only, 0 };
    int sends = 0;
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
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &guard);
    if (ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
    if (once) {
        /* libcurl silently sends a request again on a new connection when a reused connection
         * closes without any answer (Curl_retry_request), or when an HTTP/2 stream is refused:
         * the server may well have processed the first copy. For a refresh-token grant that is
         * a second presentation of a token the IdP has just rotated, i.e. reuse detection and a
         * revoked family. The guard refuses the second send (the exchange then failed after the
         * request was sent: unanswered), so warm connections serve these requests too. An idle
         * connection is reused for a few seconds only: most servers close idle ones after 5 s
         * or more, and one they closed earlier is seen closed before reuse. */
        curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
        curl_easy_setopt(h, CURLOPT_PREREQDATA, &sends);
        curl_easy_setopt(h, CURLOPT_MAXAGE_CONN, 4L);
    }
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(list);
    if (rc == CURLE_ABORTED_BY_CALLBACK && sends > 1) {
        r.error = 2;   /* the first copy went out on a connection that then died: it may have been acted on */
        r.reason = "connection closed without an answer";
    } else if (rc == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
        r.error = 0;
        struct curl_header *nonce = NULL;
        if (curl_easy_header(h, "DPoP-Nonce", 0, CURLH_HEADER, -1, &nonce) == CURLHE_OK && nonce && nonce->value
            && strlen(nonce->value) <= 512)
            r.dpop_nonce = strdup(nonce->value);
    } else if (b.over) {
        r.error = 3;
        r.reason = "response too large";
    } else {
        classify(h, rc, &r);
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
}
