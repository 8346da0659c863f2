#ifndef TB_SIMDJSON_H
#define TB_SIMDJSON_H
/* A C face for simdjson's DOM (simdjson is C++; Swift calls C): parse a document, walk it
 * read-only. A value is a document and a place on its tape, passed by value; the document
 * owns every string a value points into and lives until tb_sj_free. */
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_sj_document tb_sj_document;

/* A dom::element: 16 bytes, trivially copyable (checked in the .cpp). */
typedef struct { const void *doc; size_t index; } tb_sj_value;

typedef enum {
    TB_SJ_ARRAY, TB_SJ_OBJECT, TB_SJ_INT64, TB_SJ_UINT64, TB_SJ_DOUBLE, TB_SJ_STRING, TB_SJ_BOOL, TB_SJ_NULL
} tb_sj_type;

/* Parses `len` bytes (RFC 8259: UTF-8 checked, numbers exact, depth bounded) with the calling
 * thread's parser. Returns the document, its root in `root`, or NULL when the bytes are not
 * JSON, hold an object with a repeated name or a string with NUL, or memory ran out. */
tb_sj_document *tb_sj_parse(const char *bytes, size_t len, tb_sj_value *root);
void tb_sj_free(tb_sj_document *doc);

tb_sj_type tb_sj_type_of(tb_sj_value v);
/* The member named `key` of an object (true), or false when it has none. */
bool tb_sj_member(tb_sj_value object, const char *key, size_t key_len, tb_sj_value *out);
int64_t tb_sj_int64(tb_sj_value v);
double tb_sj_double(tb_sj_value v);   /* any number */
bool tb_sj_bool(tb_sj_value v);
const char *tb_sj_string(tb_sj_value v, size_t *len);
/* An array's length, and its elements written to `out` in one pass (up to `max`). */
size_t tb_sj_array_count(tb_sj_value array);
size_t tb_sj_array_values(tb_sj_value array, tb_sj_value *out, size_t max);

#ifdef __cplusplus
}
#endif
#endif
