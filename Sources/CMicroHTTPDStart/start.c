#include "CMicroHTTPDStart.h"

struct MHD_Daemon *tb_mhd_start(const struct tb_mhd_options *o) {
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO;
    return MHD_start_daemon(flags, 0, NULL, NULL, o->handler, o->cls,
                            MHD_OPTION_SOCK_ADDR, o->addr,
                            MHD_OPTION_THREAD_POOL_SIZE, o->threads,
                            MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->connection_memory_limit,
                            MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_ip_connection_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, o->completed, o->cls,
                            MHD_OPTION_URI_LOG_CALLBACK, o->uri_log, o->cls,
                            MHD_OPTION_NOTIFY_CONNECTION, o->notify_connection, o->cls,
                            MHD_OPTION_END);
}

uint16_t tb_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

int tb_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

void *tb_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}
