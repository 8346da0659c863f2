#include <jansson.h>

/* json_typeof is a macro; json_decref a static inline with atomics. Typed wrappers for Swift. */
static inline json_type tb_json_typeof(const json_t *j) { return json_typeof(j); }
static inline void tb_json_decref(json_t *j) { json_decref(j); }
static const size_t tb_JSON_REJECT_DUPLICATES = JSON_REJECT_DUPLICATES;
