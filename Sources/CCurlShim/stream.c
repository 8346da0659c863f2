#include "CCurlShim.h"
#include "common.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A head larger than this fails the exchange (libcurl bounds each line; this bounds them all). */
#define MAX_HEAD_BYTES (256 * 1024)
/* A dropped body is read and thrown away up to this, to keep the connection; beyond, the
 * exchange is cut (the connection is then closed). */
#define MAX_DRAIN_BYTES (64 * 1024)

typedef struct {
    const tb_http_stream_callbacks *cb;
    long long body_len;        /* of the request, -1 unknown */
    long long sent;            /* request body bytes handed to libcurl */
    /* The head being read: its status and its header lines, each NUL-terminated. */
    long status;
    char *lines;
    size_t len, cap;
    int head_too_large;
    int delivered, take;
    /* The response body. */
    long long max, got;
    size_t drained;
    int over, gone, abandoned, drain_cut;
} stream_state;

static long parse_status(const char *p, size_t len) {
    size_t i = 0;
    while (i < len && p[i] != ' ') i++;
    while (i < len && p[i] == ' ') i++;
    long v = 0;
    int digits = 0;
    for (; i < len && digits < 3 && p[i] >= '0' && p[i] <= '9'; i++, digits++) v = v * 10 + (p[i] - '0');
    return digits == 3 ? v : 0;
}

/* Appends `len` bytes and a NUL, or marks the head too large. `join`: the bytes continue the
 * previous line (an obsolete folded header line), so its NUL becomes a space. */
static int append_line(stream_state *s, const char *p, size_t len, int join) {
    if (join && s->len == 0) return 1;   /* a continuation of nothing: ignored */
    if (s->len + len + 2 > MAX_HEAD_BYTES) { s->head_too_large = 1; return 0; }
    if (s->len + len + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 2048;
        while (cap < s->len + len + 2) cap *= 2;
        char *d = realloc(s->lines, cap);
        if (!d) { s->head_too_large = 1; return 0; }
        s->lines = d;
        s->cap = cap;
    }
    if (join) s->lines[s->len - 1] = ' ';
    memcpy(s->lines + s->len, p, len);
    s->len += len;
    s->lines[s->len++] = 0;
    return 1;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Hands the collected head to the caller: each line split at its first colon, the value's
 * surrounding blanks removed; a line without a colon is skipped. */
static void deliver_head(stream_state *s) {
    if (s->delivered) return;
    s->delivered = 1;
    int n = 0;
    for (size_t i = 0; i < s->len; i++) n += s->lines[i] == 0;
    tb_http_header *hs = calloc(n ? n : 1, sizeof *hs);
    int k = 0;
    for (size_t i = 0; hs && i < s->len; ) {
        const char *line = s->lines + i;
        size_t l = strlen(line);
        i += l + 1;
        const char *colon = memchr(line, ':', l);
        if (!colon || colon == line) continue;
        const char *v = colon + 1, *end = line + l;
        while (v < end && is_blank(*v)) v++;
        while (end > v && is_blank(end[-1])) end--;
        hs[k++] = (tb_http_header){ line, (size_t)(colon - line), v, (size_t)(end - v) };
    }
    s->take = s->cb->head(s->cb->context, s->status, hs, k) != 0;
    free(hs);
}

/* Every line of every head (libcurl passes interim 1xx heads, and trailers after a chunked
 * body, through here too): a status line starts a head, the blank line ends it; a final head
 * (status 200 or more) is delivered at once, an interim one forgotten; trailers are ignored. */
static size_t on_head_line(char *ptr, size_t size, size_t n, void *ud) {
    stream_state *s = ud;
    size_t len = size * n, l = len;
    if (s->delivered) return len;
    while (l > 0 && (ptr[l - 1] == '\r' || ptr[l - 1] == '\n')) l--;
    if (l >= 5 && strncmp(ptr, "HTTP/", 5) == 0) {
        s->status = parse_status(ptr, l);
        s->len = 0;
        return len;
    }
    if (l == 0) {
        if (s->status >= 200) deliver_head(s);
        else { s->status = 0; s->len = 0; }
        return len;
    }
    return append_line(s, ptr, l, is_blank(ptr[0])) ? len : 0;
}

static size_t on_body_piece(char *ptr, size_t size, size_t n, void *ud) {
    stream_state *s = ud;
    size_t len = size * n;
    if (!s->delivered) deliver_head(s);   /* a head whose blank line never came through */
    if (!s->take) {
        s->drained += len;
        if (s->drained > MAX_DRAIN_BYTES) { s->drain_cut = 1; return 0; }
        return len;
    }
    size_t pass = len;
    if (s->got + (long long)len > s->max) { s->over = 1; pass = (size_t)(s->max - s->got); }
    if (pass > 0 && !s->cb->body(s->cb->context, ptr, pass)) { s->gone = 1; return 0; }
    s->got += pass;
    return s->over ? 0 : len;
}

static size_t on_body_read(char *buf, size_t size, size_t n, void *ud) {
    stream_state *s = ud;
    if (!s->cb->read_body) return 0;
    long got = s->cb->read_body(s->cb->context, buf, size * n);
    /* A body that ends before its announced length was abandoned too: sending it short would
     * leave the upstream waiting for the rest. */
    if (got < 0 || (got == 0 && s->body_len >= 0 && s->sent < s->body_len)) {
        s->abandoned = 1;
        return CURL_READFUNC_ABORT;
    }
    s->sent += got;
    return (size_t)got;
}

/* The request's header list: the caller's lines, without the ones that frame the body (the
 * body's length decides Content-Length or chunked, never the caller) nor Expect; then "Expect:"
 * and, unless the caller sent one, "Accept:", which keep libcurl from adding its own. */
static struct curl_slist *header_list(const tb_http_stream_request *q) {
    struct curl_slist *list = NULL;
    int accept = 0;
    for (int i = 0; i < q->nheaders; i++) {
        const char *h = q->headers[i];
        if (strncasecmp(h, "content-length:", 15) == 0 || strncasecmp(h, "transfer-encoding:", 18) == 0
            || strncasecmp(h, "expect:", 7) == 0)
            continue;
        if (strncasecmp(h, "accept:", 7) == 0 || strncasecmp(h, "accept;", 7) == 0) accept = 1;
        list = curl_slist_append(list, h);
    }
    list = curl_slist_append(list, "Expect:");
    if (!accept) list = curl_slist_append(list, "Accept:");
    return list;
}

tb_http_stream_result tb_http_stream(void *handle, const tb_http_stream_request *q, const tb_http_stream_callbacks *cb) {
    tb_http_stream_result r = { 2, NULL, 0, 0 };
    CURL *h = handle;
    connect_guard guard = { q->public_only, 0 };
    prereq_state pre = { h, q->once, 0, 0, NULL };
    stream_state s = { 0 };
    s.cb = cb;
    s.body_len = q->has_body ? q->body_len : 0;
    s.max = q->max_bytes;
    struct curl_slist *list = header_list(q);

    tb_set_common(h, q->url, q->connect_timeout_ms, q->timeout_ms, q->max_idle_s, q->trust, NULL, 0, &guard, &pre,
                  list, on_head_line, &s, on_body_piece, &s);
    tb_set_client_certificate(h, q->client_cert, q->client_cert_len, q->client_key, q->client_key_len);
    curl_easy_setopt(h, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    /* The bytes as the upstream sent them: no Accept-Encoding asked for, nothing decoded. */
    curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    /* A kept handle holds its upload buffer (64 KB by default) between requests. */
    curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
    int is_head = strcmp(q->method, "HEAD") == 0;
    int sends_body = q->has_body || strcmp(q->method, "POST") == 0 || strcmp(q->method, "PUT") == 0
                  || strcmp(q->method, "PATCH") == 0;
    if (is_head) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (sends_body) {
        /* An upload (PUT in libcurl's words) under the given method: no Content-Type added, the
         * length as Content-Length, or chunked over HTTP/1.1 when unknown (-1). A POST or PUT
         * without a body says Content-Length: 0. */
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_body_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &s);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)s.body_len);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, strcmp(q->method, "GET") == 0 ? NULL : q->method);
    }
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(list);
    r.connected = tb_after_perform(h, &pre);
    if (rc == CURLE_OK && !s.delivered && s.status >= 200) deliver_head(&s);
    r.head_delivered = s.delivered;
    if (rc == CURLE_OK && s.delivered) {
        r.error = 0;
    } else if (s.over) {
        r.error = 3; r.reason = "response too large";
    } else if (s.gone) {
        r.error = 7; r.reason = "the body's reader went away";
    } else if (s.abandoned) {
        r.error = 6; r.reason = "the request body was abandoned";
    } else if (guard.refused) {
        r.error = 5; r.reason = "address is not public";
    } else if (s.head_too_large) {
        r.error = 2; r.reason = "response head too large";
    } else if (s.drain_cut) {
        r.error = 2; r.reason = "dropped body too long to read";
    } else if (rc == CURLE_ABORTED_BY_CALLBACK && pre.sends > 1) {
        r.error = 2; r.reason = "connection closed without an answer";
    } else if (rc == CURLE_OK) {
        r.error = 2; r.reason = "no answer";
    } else {
        tb_classify(h, rc, &r.error, &r.reason);
    }
    free(s.lines);
    return r;
}
