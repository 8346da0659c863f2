#include <sys/types.h>
#include <sys/socket.h>
#include <stdint.h>
#include <microhttpd.h>

/* MHD's closed enums import as Swift enums with stripped prefixes; these keep the C names. */
static const enum MHD_Result tb_MHD_YES = MHD_YES;
static const enum MHD_Result tb_MHD_NO = MHD_NO;
static const enum MHD_ValueKind tb_MHD_HEADER_KIND = MHD_HEADER_KIND;
static const enum MHD_ValueKind tb_MHD_GET_ARGUMENT_KIND = MHD_GET_ARGUMENT_KIND;
static const enum MHD_ResponseMemoryMode tb_MHD_RESPMEM_MUST_COPY = MHD_RESPMEM_MUST_COPY;
static const enum MHD_ConnectionNotificationCode tb_MHD_CONNECTION_NOTIFY_STARTED = MHD_CONNECTION_NOTIFY_STARTED;

/* Macros with casts are not imported: the streamed response's size and reader answers. */
static const uint64_t tb_MHD_SIZE_UNKNOWN = MHD_SIZE_UNKNOWN;
static const ssize_t tb_MHD_CONTENT_READER_END_OF_STREAM = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t tb_MHD_CONTENT_READER_END_WITH_ERROR = MHD_CONTENT_READER_END_WITH_ERROR;
