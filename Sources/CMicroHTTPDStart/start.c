#include "CMicroHTTPDStart.h"
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>

struct MHD_Daemon *tb_mhd_start(const struct tb_mhd_options *o) {
    /* No listening socket: the Acceptor (BrokerHTTP) accepts and hands connections over; ITC
     * wakes a worker for each one. */
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO
        | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    struct MHD_OptionItem extra[8];
    int n = 0;
    if (o->tls_cert != NULL) {
        flags |= MHD_USE_TLS;
        extra[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key};
        extra[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->tls_cert};
        /* TLS 1.2 and 1.3 only (RFC 8996 deprecates 1.0 and 1.1). */
        extra[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"};
        if (o->tls_trust != NULL) {
            extra[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)o->tls_trust};
        }
    }
    extra[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(flags, 0, NULL, NULL, o->handler, o->cls,
                            MHD_OPTION_THREAD_POOL_SIZE, o->threads,
                            MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->connection_memory_limit,
                            MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_ip_connection_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, o->completed, o->cls,
                            MHD_OPTION_URI_LOG_CALLBACK, o->uri_log, o->cls,
                            MHD_OPTION_NOTIFY_CONNECTION, o->notify_connection, o->cls,
                            MHD_OPTION_ARRAY, extra,
                            MHD_OPTION_END);
}

int tb_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

void *tb_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

int tb_mhd_client_certificate(struct MHD_Connection *connection, unsigned char sha256[32]) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == NULL || info->tls_session == NULL) return -1;
    gnutls_session_t session = (gnutls_session_t)info->tls_session;
    unsigned int count = 0;
    const gnutls_datum_t *peers = gnutls_certificate_get_peers(session, &count);
    if (peers == NULL || count == 0) return 0;
    /* The chain, its dates, and the key purpose: a certificate made for a server does not
     * stand for a client (RFC 5280 §4.2.1.12, id-kp-clientAuth). */
    gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, .size = 0};
    unsigned int status = 0;
    if (gnutls_certificate_verify_peers(session, &purpose, 1, &status) < 0 || status != 0) return -1;
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, peers[0].data, peers[0].size, sha256) < 0) return -1;
    return 1;
}

int tb_mhd_client_certificate_subject(struct MHD_Connection *connection, char *buf, size_t len) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == NULL || info->tls_session == NULL || len == 0) return -1;
    unsigned int count = 0;
    const gnutls_datum_t *peers = gnutls_certificate_get_peers((gnutls_session_t)info->tls_session, &count);
    if (peers == NULL || count == 0) return -1;
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) < 0) return -1;
    gnutls_datum_t dn = {NULL, 0};
    int ok = gnutls_x509_crt_import(crt, &peers[0], GNUTLS_X509_FMT_DER) >= 0 && gnutls_x509_crt_get_dn3(crt, &dn, 0) >= 0;
    gnutls_x509_crt_deinit(crt);
    if (!ok) return -1;
    size_t n = dn.size < len - 1 ? dn.size : len - 1;
    memcpy(buf, dn.data, n);
    buf[n] = 0;
    gnutls_free(dn.data);
    return 1;
}

void *tb_tls_ticket_key_new(void) {
    gnutls_datum_t *key = calloc(1, sizeof *key);
    if (key == NULL) return NULL;
    if (gnutls_session_ticket_key_generate(key) < 0) {
        free(key);
        return NULL;
    }
    return key;
}

void tb_tls_ticket_key_free(void *p) {
    gnutls_datum_t *key = p;
    if (key == NULL) return;
    if (key->data != NULL) {
        gnutls_memset(key->data, 0, key->size);
        gnutls_free(key->data);
    }
    free(key);
}

static gnutls_session_t tls_session(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return info == NULL ? NULL : (gnutls_session_t)info->tls_session;
}

int tb_mhd_enable_session_tickets(struct MHD_Connection *connection, void *key) {
    gnutls_session_t session = tls_session(connection);
    if (session == NULL || key == NULL) return -1;
    return gnutls_session_ticket_enable_server(session, (const gnutls_datum_t *)key) < 0 ? -1 : 0;
}

int tb_mhd_tls_resumed(struct MHD_Connection *connection) {
    gnutls_session_t session = tls_session(connection);
    if (session == NULL) return -1;
    return gnutls_session_is_resumed(session) ? 1 : 0;
}

unsigned int tb_mhd_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}
