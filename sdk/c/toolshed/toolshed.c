/*
 * toolshed.c: the Toolshed plugin SDK for C, ABI version 1 (toolshed.h,
 * docs/ABI.md). One call at a time: the state below is the instance's.
 */
#include "toolshed.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Eight bytes at a time. Under the host's deadline enforcement every
 * loop iteration in the module costs a check (docs/ABI.md), so the loops
 * over bytes below take eight per iteration where they can: a word is
 * tested for the bytes that matter with the classic bit tricks
 * (has_byte, has_less), and only a word that holds one is looked into. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static inline uint64_t load8(const char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
/* The high bit of each byte of v that is zero; exact for the lowest such
 * byte (the only one used). */
static inline uint64_t has_zero(uint64_t v) { return (v - ONES) & ~v & HIGHS; }
static inline uint64_t has_byte(uint64_t v, unsigned char c) { return has_zero(v ^ (ONES * c)); }
/* Bytes below n (n <= 128). */
static inline uint64_t has_less(uint64_t v, unsigned char n) { return (v - ONES * n) & ~v & HIGHS; }
/* The index of the lowest marked byte (WebAssembly is little-endian). */
static inline size_t first_byte(uint64_t m) { return (size_t)__builtin_ctzll(m) >> 3; }

/* ---- Host imports. ---- */

__attribute__((import_module("toolshed"), import_name("host_call")))
int32_t ts__host_call(const char *op, int32_t op_len, const char *req, int32_t req_len);
__attribute__((import_module("toolshed"), import_name("host_result")))
int32_t ts__host_result(char *buf, int32_t len);

/* ---- A growable byte buffer. ---- */

typedef struct {
    char *p;
    size_t len, cap;
} buf;

static void buf_grow(buf *b, size_t n) {
    if (b->len + n <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) abort(); /* out of memory: the host fails the call and discards the instance */
    b->p = p;
    b->cap = cap;
}

static void buf_put(buf *b, const char *s, size_t n) {
    buf_grow(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void buf_byte(buf *b, char c) {
    buf_grow(b, 1);
    b->p[b->len++] = c;
}

static void buf_vprintf(buf *b, const char *format, va_list ap) {
    va_list again;
    va_copy(again, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, format, ap);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof small) {
        buf_put(b, small, (size_t)n);
    } else {
        buf_grow(b, (size_t)n + 1);
        vsnprintf(b->p + b->len, (size_t)n + 1, format, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

/* JSON string escaping (quotes not included). */
static void buf_escape(buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    buf_grow(b, n);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        while (n - i >= 8) { /* eight plain bytes at a time */
            uint64_t v = load8(s + i), m = has_less(v, 0x20) | has_byte(v, '"') | has_byte(v, '\\');
            if (m) {
                i += first_byte(m);
                break;
            }
            i += 8;
        }
        if (i >= n) break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        buf_put(b, s + start, i - start);
        start = i + 1;
        switch (c) {
        case '"': buf_put(b, "\\\"", 2); break;
        case '\\': buf_put(b, "\\\\", 2); break;
        case '\n': buf_put(b, "\\n", 2); break;
        case '\r': buf_put(b, "\\r", 2); break;
        case '\t': buf_put(b, "\\t", 2); break;
        default: {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            buf_put(b, u, 6);
        }
        }
    }
    buf_put(b, s + start, n - start);
}

/* ---- The per-call arena: chunks freed when the next call starts. ---- */

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    char data[];
} chunk;

static chunk *arena;

static char *arena_alloc(size_t n) {
    if (!arena || arena->cap - arena->used < n) {
        size_t cap = n > 4096 ? n : 4096;
        chunk *c = malloc(sizeof(chunk) + cap);
        if (!c) abort();
        c->next = arena;
        c->used = 0;
        c->cap = cap;
        arena = c;
    }
    char *p = arena->data + arena->used;
    arena->used += n;
    return p;
}

static void arena_reset(void) {
    while (arena && arena->next) {
        chunk *next = arena->next;
        free(arena);
        arena = next;
    }
    if (arena) arena->used = 0;
}

/* ---- JSON reading. The host sends valid JSON (it compacts the
 * arguments and checks them), so these skip rather than validate; on
 * anything unexpected they stop and report nothing found. ---- */

static const char *ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* The first '"' or '\\' at or after p, or e. */
static const char *quote_or_escape(const char *p, const char *e) {
    while (e - p >= 8) {
        uint64_t v = load8(p), m = has_byte(v, '"') | has_byte(v, '\\');
        if (m) return p + first_byte(m);
        p += 8;
    }
    while (p < e && *p != '"' && *p != '\\') p++;
    return p;
}

/* p at '"': returns just past the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *e) {
    for (p++;;) {
        p = quote_or_escape(p, e);
        if (p >= e) return NULL;
        if (*p == '"') return p + 1;
        p += 2; /* an escape: its next byte is never the end */
    }
}

/* Returns just past the value at p, or NULL. Iterative: any nesting. */
static const char *skip_value(const char *p, const char *e) {
    p = ws(p, e);
    if (p >= e) return NULL;
    if (*p == '"') return skip_string(p, e);
    if (*p != '{' && *p != '[') {
        while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') p++;
        return p;
    }
    size_t depth = 0;
    while (p < e) {
        char c = *p;
        if (c == '"') {
            p = skip_string(p, e);
            if (!p) return NULL;
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') {
            if (--depth == 0) return p + 1;
        }
        p++;
    }
    return NULL;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(const char *p, const char *e, unsigned *out) {
    if (e - p < 4) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return 0;
        v = v << 4 | (unsigned)h;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 0x3f)); o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Unescapes the JSON string at s (quotes included). Without escapes the
 * text is returned in place; with them, decoded into the arena. */
static int unquote(ts_str s, ts_str *out) {
    const char *p = s.ptr, *e = s.ptr + s.len;
    if (s.len < 2 || *p != '"' || e[-1] != '"') return TS_WRONG_TYPE;
    p++;
    e--;
    const char *bs = p;
    while ((bs = quote_or_escape(bs, e)) < e && *bs != '\\') bs++; /* a '"' inside: JSON has none unescaped */
    if (bs >= e) {
        out->ptr = p;
        out->len = (size_t)(e - p);
        return TS_OK;
    }
    char *o = arena_alloc((size_t)(e - p)), *start = o; /* decoding never grows the text */
    while (p < e) {
        if (*p != '\\') { *o++ = *p++; continue; }
        if (++p >= e) return TS_WRONG_TYPE;
        char c = *p++;
        switch (c) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (!hex4(p, e, &cp)) return TS_WRONG_TYPE;
            p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && e - p >= 6 && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, e, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            } else if (cp >= 0xd800 && cp < 0xe000) {
                cp = 0xfffd; /* a lone surrogate */
            }
            o += put_utf8(o, cp);
            break;
        }
        default: *o++ = c; /* \" \\ \/ */
        }
    }
    out->ptr = start;
    out->len = (size_t)(o - start);
    return TS_OK;
}

int ts_json_string(ts_str json, ts_str *out) {
    const char *p = ws(json.ptr, json.ptr + json.len), *e = json.ptr + json.len;
    while (e > p && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t' || e[-1] == '\r')) e--;
    ts_str s = {p, (size_t)(e - p)};
    return unquote(s, out);
}

/* Whether the JSON string key (quotes included) says name. */
static int key_is(ts_str key, const char *name) {
    size_t n = strlen(name);
    if (key.len == n + 2 && !memchr(key.ptr, '\\', key.len)) return memcmp(key.ptr + 1, name, n) == 0;
    ts_str k;
    return unquote(key, &k) == TS_OK && k.len == n && memcmp(k.ptr, name, n) == 0;
}

int ts_json_member(ts_str json, const char *key, ts_str *out) {
    const char *p = ws(json.ptr, json.ptr + json.len), *e = json.ptr + json.len;
    if (p >= e || *p != '{') return TS_WRONG_TYPE;
    p = ws(p + 1, e);
    while (p < e && *p == '"') {
        const char *k = p;
        p = skip_string(p, e);
        if (!p) return TS_ABSENT;
        ts_str ks = {k, (size_t)(p - k)};
        p = ws(p, e);
        if (p >= e || *p != ':') return TS_ABSENT;
        const char *v = ws(p + 1, e);
        p = skip_value(v, e);
        if (!p) return TS_ABSENT;
        if (key_is(ks, key)) {
            if (p - v == 4 && memcmp(v, "null", 4) == 0) return TS_ABSENT;
            out->ptr = v;
            out->len = (size_t)(p - v);
            return TS_OK;
        }
        p = ws(p, e);
        if (p < e && *p == ',') p = ws(p + 1, e);
    }
    return TS_ABSENT;
}

/* ---- Arguments. ---- */

/* The arguments and an index of their top-level members, made in one
 * pass before the handler runs, so that each lookup does not scan the
 * object again. An object with more members than the index holds is
 * looked up by scanning. */
#define MAX_INDEXED 32

struct ts_args {
    ts_str json;
    int n; /* members indexed; -1: not indexed */
    struct {
        ts_str key; /* quotes included */
        ts_str val;
    } m[MAX_INDEXED];
};

/* index_args indexes a->json and returns just past the object, or NULL
 * when it is not one or has more members than the index holds (a->n is
 * then -1 and lookups scan). */
static const char *index_args(ts_args *a) {
    const char *p = ws(a->json.ptr, a->json.ptr + a->json.len), *e = a->json.ptr + a->json.len;
    a->n = -1;
    if (p >= e || *p != '{') return NULL;
    int n = 0;
    p = ws(p + 1, e);
    while (p < e && *p == '"') {
        if (n == MAX_INDEXED) return NULL;
        const char *k = p;
        if (!(p = skip_string(p, e))) return NULL;
        a->m[n].key.ptr = k;
        a->m[n].key.len = (size_t)(p - k);
        p = ws(p, e);
        if (p >= e || *p != ':') return NULL;
        const char *v = ws(p + 1, e);
        if (!(p = skip_value(v, e))) return NULL;
        a->m[n].val.ptr = v;
        a->m[n].val.len = (size_t)(p - v);
        n++;
        p = ws(p, e);
        if (p < e && *p == ',') p = ws(p + 1, e);
    }
    if (p >= e || *p != '}') return NULL;
    a->n = n;
    return p + 1;
}

ts_str ts_args_json(const ts_args *a) { return a->json; }

int ts_arg_raw(const ts_args *a, const char *key, ts_str *out) {
    if (a->n < 0) return ts_json_member(a->json, key, out);
    for (int i = a->n - 1; i >= 0; i--) { /* the last of duplicate keys wins, as in ts_json_member's callers' JSON */
        if (key_is(a->m[i].key, key)) {
            ts_str v = a->m[i].val;
            if (v.len == 4 && memcmp(v.ptr, "null", 4) == 0) return TS_ABSENT;
            *out = v;
            return TS_OK;
        }
    }
    return TS_ABSENT;
}

int ts_arg_string(const ts_args *a, const char *key, ts_str *out) {
    ts_str v;
    int rc = ts_arg_raw(a, key, &v);
    if (rc != TS_OK) return rc;
    return v.ptr[0] == '"' ? unquote(v, out) : TS_WRONG_TYPE;
}

/* A number's text, NUL-terminated in the arena. */
static int number_text(const ts_args *a, const char *key, char **text) {
    ts_str v;
    int rc = ts_arg_raw(a, key, &v);
    if (rc != TS_OK) return rc;
    if (v.ptr[0] != '-' && (v.ptr[0] < '0' || v.ptr[0] > '9')) return TS_WRONG_TYPE;
    char *t = arena_alloc(v.len + 1);
    memcpy(t, v.ptr, v.len);
    t[v.len] = 0;
    *text = t;
    return TS_OK;
}

int ts_arg_int(const ts_args *a, const char *key, long long *out) {
    char *t, *end;
    int rc = number_text(a, key, &t);
    if (rc != TS_OK) return rc;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (*end != 0 || errno != 0) return TS_WRONG_TYPE; /* a fraction, an exponent or too large */
    *out = v;
    return TS_OK;
}

int ts_arg_double(const ts_args *a, const char *key, double *out) {
    char *t, *end;
    int rc = number_text(a, key, &t);
    if (rc != TS_OK) return rc;
    double v = strtod(t, &end);
    if (*end != 0) return TS_WRONG_TYPE;
    *out = v;
    return TS_OK;
}

int ts_arg_bool(const ts_args *a, const char *key, int *out) {
    ts_str v;
    int rc = ts_arg_raw(a, key, &v);
    if (rc != TS_OK) return rc;
    if (v.len == 4 && memcmp(v.ptr, "true", 4) == 0) *out = 1;
    else if (v.len == 5 && memcmp(v.ptr, "false", 5) == 0) *out = 0;
    else return TS_WRONG_TYPE;
    return TS_OK;
}

int ts_arg_array(const ts_args *a, const char *key, ts_iter *it) {
    ts_str v;
    int rc = ts_arg_raw(a, key, &v);
    if (rc != TS_OK) return rc;
    if (v.ptr[0] != '[') return TS_WRONG_TYPE;
    it->p = v.ptr + 1;
    it->end = v.ptr + v.len - 1;
    return TS_OK;
}

int ts_next(ts_iter *it, ts_str *element) {
    const char *p = ws(it->p, it->end);
    if (p < it->end && *p == ',') p = ws(p + 1, it->end);
    if (p >= it->end) return 0;
    const char *q = skip_value(p, it->end);
    if (!q) return 0;
    element->ptr = p;
    element->len = (size_t)(q - p);
    it->p = q;
    return 1;
}

/* ---- Results. ---- */

struct ts_json {
    buf b;
    unsigned char comma[65]; /* per depth: a value was written, the next needs a comma */
    int depth;
    int after_key;
};

struct ts_result {
    buf content; /* escaped */
    int has_content, has_structured, is_error;
    ts_json structured;
};

static ts_result result;

static void value_start(ts_json *w) {
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->comma[w->depth]) buf_byte(&w->b, ',');
    w->comma[w->depth] = 1;
}

void ts_json_object(ts_json *w) {
    value_start(w);
    buf_byte(&w->b, '{');
    if (w->depth < 64) w->comma[++w->depth] = 0;
}
void ts_json_end_object(ts_json *w) {
    buf_byte(&w->b, '}');
    if (w->depth > 0) w->depth--;
}
void ts_json_array(ts_json *w) {
    value_start(w);
    buf_byte(&w->b, '[');
    if (w->depth < 64) w->comma[++w->depth] = 0;
}
void ts_json_end_array(ts_json *w) {
    buf_byte(&w->b, ']');
    if (w->depth > 0) w->depth--;
}
void ts_json_key(ts_json *w, const char *key) {
    value_start(w);
    buf_byte(&w->b, '"');
    buf_escape(&w->b, key, strlen(key));
    buf_put(&w->b, "\":", 2);
    w->after_key = 1;
}
void ts_json_str(ts_json *w, const char *s, size_t len) {
    value_start(w);
    buf_byte(&w->b, '"');
    buf_escape(&w->b, s, len);
    buf_byte(&w->b, '"');
}
void ts_json_cstr(ts_json *w, const char *s) { ts_json_str(w, s, strlen(s)); }
void ts_json_int(ts_json *w, long long v) {
    value_start(w);
    char t[24], *p = t + sizeof t; /* by hand: printf's machinery costs more than the tool */
    unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    buf_put(&w->b, p, (size_t)(t + sizeof t - p));
}
void ts_json_double(ts_json *w, double v) {
    if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
        ts_json_null(w);
        return;
    }
    value_start(w);
    char t[32];
    int n = snprintf(t, sizeof t, "%.17g", v);
    buf_put(&w->b, t, (size_t)n);
}
void ts_json_bool(ts_json *w, int v) {
    value_start(w);
    if (v) buf_put(&w->b, "true", 4);
    else buf_put(&w->b, "false", 5);
}
void ts_json_null(ts_json *w) {
    value_start(w);
    buf_put(&w->b, "null", 4);
}
void ts_json_raw(ts_json *w, const char *json, size_t len) {
    value_start(w);
    buf_put(&w->b, json, len);
}

void ts_text(ts_result *r, const char *s, size_t len) {
    r->content.len = 0;
    buf_escape(&r->content, s, len);
    r->has_content = 1;
}

static void vtext(ts_result *r, const char *format, va_list ap) {
    buf tmp = {0};
    buf_vprintf(&tmp, format, ap);
    ts_text(r, tmp.p ? tmp.p : "", tmp.len);
    free(tmp.p);
}

void ts_textf(ts_result *r, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vtext(r, format, ap);
    va_end(ap);
}

void ts_error(ts_result *r, const char *msg) {
    ts_text(r, msg, strlen(msg));
    r->is_error = 1;
}

void ts_errorf(ts_result *r, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vtext(r, format, ap);
    va_end(ap);
    r->is_error = 1;
}

ts_json *ts_structured(ts_result *r) {
    ts_json *w = &r->structured;
    w->b.len = 0;
    w->depth = 0;
    w->comma[0] = 0;
    w->after_key = 0;
    r->has_structured = 1;
    return w;
}

/* ---- Capabilities. ---- */

int ts_host_call(const char *op, const char *request, size_t len, ts_str *reply) {
    static const char failed[] = "the host could not read the operation or its request";
    int32_t n = ts__host_call(op, (int32_t)strlen(op), request, (int32_t)len);
    if (n < 0) {
        reply->ptr = failed;
        reply->len = sizeof failed - 1;
        return TS_FAILED;
    }
    char *p = arena_alloc((size_t)n);
    if (ts__host_result(p, n) != n) {
        reply->ptr = failed;
        reply->len = sizeof failed - 1;
        return TS_FAILED;
    }
    ts_str all = {p, (size_t)n}, v;
    if (ts_json_member(all, "ok", &v) == TS_OK) {
        *reply = v;
        return TS_OK;
    }
    if (ts_json_member(all, "ok", &v) == TS_ABSENT && ts_json_member(all, "error", &v) != TS_OK) {
        static const char none[] = "null";
        reply->ptr = none; /* {"ok": null} or {}: done, nothing to say */
        reply->len = 4;
        return TS_OK;
    }
    if (ts_json_string(v, reply) != TS_OK) *reply = v;
    return TS_FAILED;
}

/* arena_json moves what w wrote into the arena. */
static ts_str arena_json(ts_json *w) {
    char *p = arena_alloc(w->b.len);
    memcpy(p, w->b.p, w->b.len);
    ts_str s = {p, w->b.len};
    free(w->b.p);
    return s;
}

/* request builds {"k1":"v1","k2":"v2"} into the arena. */
static ts_str request2(const char *k1, const char *v1, const char *k2, const char *v2) {
    ts_json w = {0};
    ts_json_object(&w);
    ts_json_key(&w, k1);
    ts_json_cstr(&w, v1);
    if (k2) {
        ts_json_key(&w, k2);
        ts_json_cstr(&w, v2);
    }
    ts_json_end_object(&w);
    return arena_json(&w);
}

int ts_log(const char *level, const char *message) {
    ts_str req = request2("level", level, "message", message), reply;
    return ts_host_call("log", req.ptr, req.len, &reply);
}

int ts_config_get(const char *key, ts_str *value) {
    ts_str req = request2("key", key, NULL, NULL), reply;
    int rc = ts_host_call("config.get", req.ptr, req.len, &reply);
    if (rc != TS_OK) {
        *value = reply;
        return rc;
    }
    ts_str v;
    if (ts_json_member(reply, "value", &v) != TS_OK) return TS_ABSENT;
    return ts_json_string(v, value);
}

int ts_client_log(const char *level, const char *message) {
    ts_str req = request2("level", level, "data", message), reply;
    return ts_host_call("client.log", req.ptr, req.len, &reply);
}

int ts_progress(double progress, double total, int *sent) {
    ts_json w = {0};
    ts_json_object(&w);
    ts_json_key(&w, "progress");
    ts_json_double(&w, progress);
    ts_json_key(&w, "total");
    ts_json_double(&w, total);
    ts_json_end_object(&w);
    ts_str req = arena_json(&w), reply, v;
    *sent = 0;
    int rc = ts_host_call("client.progress", req.ptr, req.len, &reply);
    if (rc == TS_OK && ts_json_member(reply, "sent", &v) == TS_OK) *sent = v.len == 4 && memcmp(v.ptr, "true", 4) == 0;
    return rc;
}

int ts_sample_text(const char *prompt, int max_tokens, ts_str *text) {
    ts_json w = {0};
    ts_json_object(&w);
    ts_json_key(&w, "messages");
    ts_json_array(&w);
    ts_json_object(&w);
    ts_json_key(&w, "role");
    ts_json_cstr(&w, "user");
    ts_json_key(&w, "text");
    ts_json_cstr(&w, prompt);
    ts_json_end_object(&w);
    ts_json_end_array(&w);
    ts_json_key(&w, "max_tokens");
    ts_json_int(&w, max_tokens);
    ts_json_end_object(&w);
    ts_str req = arena_json(&w), reply, v;
    int rc = ts_host_call("client.sample", req.ptr, req.len, &reply);
    if (rc != TS_OK) {
        *text = reply;
        return rc;
    }
    if (ts_json_member(reply, "text", &v) != TS_OK) return TS_ABSENT;
    return ts_json_string(v, text);
}

int ts_elicit(const char *message, const char *schema_json, ts_str *reply) {
    ts_json w = {0};
    ts_json_object(&w);
    ts_json_key(&w, "message");
    ts_json_cstr(&w, message);
    ts_json_key(&w, "schema");
    ts_json_raw(&w, schema_json, strlen(schema_json));
    ts_json_end_object(&w);
    ts_str req = arena_json(&w);
    return ts_host_call("client.elicit", req.ptr, req.len, reply);
}

/* ---- Registration and the exports. ---- */

#define MAX_TOOLS 64

static struct {
    const char *name;
    ts_handler fn;
} tools[MAX_TOOLS];
static int ntools;

void ts_handle(const char *tool, ts_handler handler) {
    for (int i = 0; i < ntools; i++) {
        if (strcmp(tools[i].name, tool) == 0) {
            tools[i].fn = handler;
            return;
        }
    }
    if (ntools == MAX_TOOLS) abort(); /* a programmer's error, at registration */
    tools[ntools].name = tool;
    tools[ntools].fn = handler;
    ntools++;
}

static unsigned char request_buffer[16384];
static char *big_request; /* toolshed_alloc's buffer for a request over 16 KiB */
static buf out;           /* the result, valid until the next call */

__attribute__((export_name("toolshed_abi_version"))) int32_t toolshed_abi_version(void) { return TS_ABI_VERSION; }

__attribute__((export_name("toolshed_request_buffer"))) uint64_t toolshed_request_buffer(void) {
    return (uint64_t)(uintptr_t)request_buffer << 32 | sizeof request_buffer;
}

__attribute__((export_name("toolshed_alloc"))) uint32_t toolshed_alloc(uint32_t size) {
    free(big_request);
    big_request = malloc(size ? size : 1);
    if (!big_request) abort();
    return (uint32_t)(uintptr_t)big_request;
}

static uint64_t finish(void) {
    ts_result *r = &result;
    out.len = 0;
    buf_byte(&out, '{');
    int comma = 0;
    if (r->has_content || !r->has_structured) {
        buf_put(&out, "\"content\":\"", 11);
        buf_put(&out, r->content.p ? r->content.p : "", r->content.len);
        buf_byte(&out, '"');
        comma = 1;
    }
    if (r->has_structured && r->structured.b.len > 0) {
        if (comma) buf_byte(&out, ',');
        buf_put(&out, "\"structured\":", 13);
        buf_put(&out, r->structured.b.p, r->structured.b.len);
        comma = 1;
    }
    if (r->is_error) {
        if (comma) buf_byte(&out, ',');
        buf_put(&out, "\"is_error\":true", 15);
    }
    buf_byte(&out, '}');
    return (uint64_t)(uintptr_t)out.p << 32 | (uint32_t)out.len;
}

/* fast_request reads the request as this host writes it, compact with
 * "tool" first and "arguments" last: {"tool":"NAME","arguments":{...}}
 * (docs/ABI.md), without scanning the arguments. Anything else is read
 * by the general path. */
static int fast_request(ts_str req, ts_str *tool, ts_str *args) {
    static const char head[] = "{\"tool\":\"", mid[] = ",\"arguments\":";
    const char *p = req.ptr, *e = req.ptr + req.len;
    if (req.len < sizeof head - 1 || memcmp(p, head, sizeof head - 1) != 0 || e[-1] != '}') return 0;
    p += sizeof head - 1;
    const char *q = quote_or_escape(p, e);
    if (q >= e || *q != '"') return 0; /* an escaped name: the general path */
    tool->ptr = p;
    tool->len = (size_t)(q - p);
    p = q + 1;
    if ((size_t)(e - p) < sizeof mid - 1 + 1 || memcmp(p, mid, sizeof mid - 1) != 0) return 0;
    p += sizeof mid - 1;
    if (*p != '{' || e - 1 <= p || e[-2] != '}') return 0;
    args->ptr = p;
    args->len = (size_t)(e - 1 - p);
    return 1;
}

__attribute__((export_name("toolshed_call"))) uint64_t toolshed_call(uint32_t ptr, uint32_t len) {
    arena_reset();
    ts_result *r = &result;
    r->content.len = 0;
    r->has_content = r->has_structured = r->is_error = 0;
    r->structured.b.len = 0;
    ts_str req = {(const char *)(uintptr_t)ptr, len}, tool, args;
    static ts_args a;
    int fast = fast_request(req, &tool, &args);
    if (fast) {
        /* The fast path took the rest of the request for the arguments:
         * right only if they are one object that ends there. */
        a.json = args;
        const char *end = index_args(&a);
        if (!end) end = skip_value(args.ptr, args.ptr + args.len);
        fast = end == args.ptr + args.len;
    }
    if (!fast) {
        ts_str tool_raw;
        if (ts_json_member(req, "tool", &tool_raw) != TS_OK || ts_json_string(tool_raw, &tool) != TS_OK) {
            ts_error(r, "the request names no tool");
            return finish();
        }
        if (ts_json_member(req, "arguments", &args) != TS_OK) {
            args.ptr = "{}";
            args.len = 2;
        }
        a.json = args;
        index_args(&a);
    }
    for (int i = 0; i < ntools; i++) {
        if (strlen(tools[i].name) == tool.len && memcmp(tools[i].name, tool.ptr, tool.len) == 0) {
            tools[i].fn(&a, r);
            return finish();
        }
    }
    ts_errorf(r, "this plugin has no tool %.*s", (int)tool.len, tool.ptr);
    return finish();
}
