#ifndef CMICROHTTPD_START_H
#define CMICROHTTPD_START_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* What tb_mhd_start passes to MHD_start_daemon (C-variadic, which Swift cannot call). Every
 * callback gets `cls`. */
struct tb_mhd_options {
    unsigned int threads;
    unsigned int connection_timeout_s;
    size_t connection_memory_limit;
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit;   /* 0: none */
    MHD_AccessHandlerCallback handler;
    MHD_RequestCompletedCallback completed;
    /* Called with the raw request target before MHD decodes it; returns the request's con_cls. */
    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *connection);
    MHD_NotifyConnectionCallback notify_connection;
    void *cls;
    /* TLS (NULL: plain HTTP): PEM text of the key and certificate chain, and of the CA bundle
     * client certificates are verified against (NULL: none asked for). */
    const char *tls_key;
    const char *tls_cert;
    const char *tls_trust;
};

/* Starts an MHD daemon: an epoll thread pool, suspend/resume allowed, no listening socket of
 * its own (connections are given to it with MHD_add_connection). */
struct MHD_Daemon *tb_mhd_start(const struct tb_mhd_options *o);

/* The connections a daemon has open now. */
unsigned int tb_mhd_connections(struct MHD_Daemon *daemon);

/* The socket of a connection (-1 when MHD does not say). */
int tb_mhd_connection_fd(struct MHD_Connection *connection);

/* The pointer the connection-notify callback stored for the connection (NULL when none). */
void *tb_mhd_socket_context(struct MHD_Connection *connection);

/* The client certificate of a TLS connection: 1 when one was presented and verifies against
 * the listener's CA bundle (its DER's SHA-256 in `sha256`), 0 when none was presented, -1 when
 * one was presented that does not verify (or the connection is not TLS). */
int tb_mhd_client_certificate(struct MHD_Connection *connection, unsigned char sha256[32]);

/* The subject DN of the connection's client certificate as RFC 4514 text (gnutls_x509_crt_get_dn3),
 * NUL-terminated in `buf` (cut at `len` - 1 bytes): 1 on success, -1 without one. Call after
 * tb_mhd_client_certificate answered 1. */
int tb_mhd_client_certificate_subject(struct MHD_Connection *connection, char *buf, size_t len);

/* A new random key for TLS session tickets (gnutls_session_ticket_key_generate), NULL when
 * GnuTLS cannot make one; freed (and wiped) by tb_tls_ticket_key_free. */
void *tb_tls_ticket_key_new(void);
void tb_tls_ticket_key_free(void *key);

/* Lets the connection's TLS session issue and accept session tickets sealed with `key` (RFC 5077
 * for TLS 1.2, RFC 8446 §4.6.1 for 1.3), so that a client resumes instead of a full handshake.
 * To be called before the handshake: libmicrohttpd creates the GnuTLS session itself and offers
 * no option for tickets, but its MHD_CONNECTION_NOTIFY_STARTED callback runs after gnutls_init
 * and before the first handshake step. `key` must outlive the session. 0 when enabled, -1 not
 * (not TLS, or GnuTLS refused). */
int tb_mhd_enable_session_tickets(struct MHD_Connection *connection, void *key);

/* Whether the connection's TLS handshake resumed a session: 1 resumed, 0 full, -1 not TLS. */
int tb_mhd_tls_resumed(struct MHD_Connection *connection);
#endif
