// The C face of simdjson (tb_simdjson.h). simdjson reads at gigabytes a second; jansson, which
// it replaces, built a hash table per object and was half of a 1,000-item batch's CPU.
#include "tb_simdjson.h"
// Debian's libsimdjson is built with threads (its simdjson.pc says so, in a flag SwiftPM does
// not pass on): the parser's layout must be the library's.
#define SIMDJSON_THREADS_ENABLED 1
#include <simdjson.h>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <unordered_set>

using namespace simdjson;

static_assert(sizeof(dom::element) == sizeof(tb_sj_value), "dom::element is two words");
static_assert(std::is_trivially_copyable<dom::element>::value, "dom::element copies as bytes");

struct tb_sj_document { dom::document doc; };

static inline dom::element element(tb_sj_value v) {
    dom::element e;
    std::memcpy(static_cast<void *>(&e), &v, sizeof e);
    return e;
}

static inline tb_sj_value value(dom::element e) {
    tb_sj_value v;
    std::memcpy(&v, static_cast<const void *>(&e), sizeof v);
    return v;
}

static inline bool has_nul(std::string_view s) { return std::memchr(s.data(), 0, s.size()) != nullptr; }

// What simdjson accepts and we do not, as jansson before it did not: an object with a repeated
// name (RFC 8259 leaves it to the reader; two readers of one body must never see two different
// values), and a string holding NUL (escaped as u0000), which C strings downstream would cut short.
static bool acceptable(dom::element e) {
    switch (e.type()) {
    case dom::element_type::OBJECT: {
        dom::object o = e.get_object().value_unsafe();
        size_t n = o.size();
        if (n > 16) {
            std::unordered_set<std::string_view> seen;
            seen.reserve(n);
            for (auto field : o) {
                if (has_nul(field.key) || !seen.insert(field.key).second) return false;
            }
        } else if (n == 1) {
            for (auto field : o) if (has_nul(field.key)) return false;
        } else if (n > 1) {
            std::string_view keys[16];
            size_t k = 0;
            for (auto field : o) {
                if (has_nul(field.key)) return false;
                for (size_t i = 0; i < k; i++) if (keys[i] == field.key) return false;
                keys[k++] = field.key;
            }
        }
        for (auto field : o) if (!acceptable(field.value)) return false;
        return true;
    }
    case dom::element_type::ARRAY:
        for (auto child : e.get_array().value_unsafe()) if (!acceptable(child)) return false;
        return true;
    case dom::element_type::STRING:
        return !has_nul(e.get_string().value_unsafe());
    default:
        return true;
    }
}

extern "C" tb_sj_document *tb_sj_parse(const char *bytes, size_t len, tb_sj_value *root) {
    // One parser per thread: it keeps its buffers between documents; each document keeps its own.
    thread_local dom::parser parser;
    auto *d = new (std::nothrow) tb_sj_document();
    if (!d) return nullptr;
    dom::element r;
    if (parser.parse_into_document(d->doc, bytes, len).get(r) != SUCCESS || !acceptable(r)) {
        delete d;
        return nullptr;
    }
    *root = value(r);
    return d;
}

extern "C" void tb_sj_free(tb_sj_document *doc) { delete doc; }

extern "C" tb_sj_type tb_sj_type_of(tb_sj_value v) {
    switch (element(v).type()) {
    case dom::element_type::ARRAY: return TB_SJ_ARRAY;
    case dom::element_type::OBJECT: return TB_SJ_OBJECT;
    case dom::element_type::INT64: return TB_SJ_INT64;
    case dom::element_type::UINT64: return TB_SJ_UINT64;
    case dom::element_type::DOUBLE: return TB_SJ_DOUBLE;
    case dom::element_type::STRING: return TB_SJ_STRING;
    case dom::element_type::BOOL: return TB_SJ_BOOL;
    default: return TB_SJ_NULL;
    }
}

extern "C" bool tb_sj_member(tb_sj_value object, const char *key, size_t key_len, tb_sj_value *out) {
    dom::element m;
    if (element(object).get_object().value_unsafe().at_key(std::string_view(key, key_len)).get(m) != SUCCESS) return false;
    *out = value(m);
    return true;
}

extern "C" int64_t tb_sj_int64(tb_sj_value v) { return element(v).get_int64().value_unsafe(); }

extern "C" double tb_sj_double(tb_sj_value v) {
    dom::element e = element(v);
    switch (e.type()) {
    case dom::element_type::INT64: return double(e.get_int64().value_unsafe());
    case dom::element_type::UINT64: return double(e.get_uint64().value_unsafe());
    default: return e.get_double().value_unsafe();
    }
}

extern "C" bool tb_sj_bool(tb_sj_value v) { return element(v).get_bool().value_unsafe(); }

extern "C" const char *tb_sj_string(tb_sj_value v, size_t *len) {
    std::string_view s = element(v).get_string().value_unsafe();
    *len = s.size();
    return s.data();
}

extern "C" size_t tb_sj_array_count(tb_sj_value array) { return element(array).get_array().value_unsafe().size(); }

extern "C" size_t tb_sj_array_values(tb_sj_value array, tb_sj_value *out, size_t max) {
    size_t n = 0;
    for (auto child : element(array).get_array().value_unsafe()) {
        if (n == max) break;
        out[n++] = value(child);
    }
    return n;
}
