/* mhd-constant: the benchmark's reference for libmicrohttpd itself (make bench). It answers
 * every request with the same bytes (a file read at start) and the token response's headers,
 * with the broker's daemon options: epoll thread pool, turbo, 16 KiB per connection. Not part
 * of the service; bench/bench.py runs it beside nginx and the broker. Usage:
 * mhd-constant PORT THREADS FILE */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

static char *body;
static size_t body_size;

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    if (*con_cls == NULL) {   /* headers only: answer on a later call, so the connection stays alive */
        *con_cls = connection;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {   /* the body is read and dropped */
        *upload_data_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(body_size, body, MHD_RESPMEM_MUST_COPY);
    if (r == NULL) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "Pragma", "no-cache");
    MHD_add_response_header(r, "X-Request-Id", "4f2a9c1e-1");
    enum MHD_Result ok = MHD_queue_response(connection, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: mhd-constant PORT THREADS FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[3], "rb");
    if (f == NULL) {
        fprintf(stderr, "mhd-constant: cannot read %s\n", argv[3]);
        return 2;
    }
    body = malloc(1 << 20);
    body_size = fread(body, 1, 1 << 20, f);
    fclose(f);
    /* Whichever thread SIGTERM lands on ends the process at once (async-signal-safe). */
    signal(SIGTERM, stop);
    signal(SIGINT, stop);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO, (uint16_t)atoi(argv[1]), NULL, NULL,
                                            answer, NULL,
                                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)atoi(argv[2]),
                                            MHD_OPTION_CONNECTION_TIMEOUT, 30u,
                                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
                                            MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "mhd-constant: cannot listen on port %s\n", argv[1]);
        return 1;
    }
    printf("listening on %s\n", argv[1]);
    fflush(stdout);
    for (;;) pause();
}
