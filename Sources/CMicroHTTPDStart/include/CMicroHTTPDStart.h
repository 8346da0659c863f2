#ifndef CMICROHTTPD_START_H
#define CMICROHTTPD_START_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* Starts an MHD daemon with typed arguments (MHD_start_daemon is C-variadic, which Swift cannot
 * call). Uses an epoll thread pool, allows suspend/resume, binds to `addr`. */
struct MHD_Daemon *tb_mhd_start(const struct sockaddr *addr, unsigned int threads,
                                unsigned int connection_timeout_s, size_t connection_memory_limit,
                                unsigned int connection_limit,
                                MHD_AccessHandlerCallback handler, void *handler_cls,
                                MHD_RequestCompletedCallback completed, void *completed_cls);

/* The port a daemon is bound to (useful with port 0). */
uint16_t tb_mhd_port(struct MHD_Daemon *daemon);
#endif
