/*
 * toolshed.h: the Toolshed plugin SDK for C (ABI version 1, docs/ABI.md).
 *
 * A plugin is a WebAssembly reactor built with clang and wasi-libc:
 *
 *     clang --target=wasm32-wasi -O2 -mexec-model=reactor \
 *         -o echo.wasm echo.c toolshed.c
 *
 * and registers its tools with TS_TOOL:
 *
 *     static void greet(const ts_args *a, ts_result *r) {
 *         ts_str name;
 *         if (ts_arg_string(a, "name", &name) != TS_OK) {
 *             ts_error(r, "name is missing");
 *             return;
 *         }
 *         ts_textf(r, "Hello, %.*s!", (int)name.len, name.ptr);
 *     }
 *     TS_TOOL("greet", greet)
 *
 * toolshed.c implements the exports (toolshed_abi_version, toolshed_alloc,
 * toolshed_call and a 16 KiB toolshed_request_buffer) and the imports of
 * the host module "toolshed" (host_call, host_result).
 *
 * Memory: every ts_str the SDK hands out (decoded arguments, replies of
 * the host) lives in a per-call arena and stays valid until the handler
 * returns; copy what you keep longer. A module serves one call at a time
 * (the host never calls an instance concurrently), so nothing here locks.
 */
#ifndef TOOLSHED_H
#define TOOLSHED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this SDK speaks. */
#define TS_ABI_VERSION 1

/* Return codes of the argument and capability helpers. */
#define TS_OK 0          /* found, of the wanted type */
#define TS_ABSENT 1      /* no such key (or JSON null) */
#define TS_WRONG_TYPE 2  /* the key holds another type, or does not fit */
#define TS_FAILED 3      /* a capability call failed: *out is the host's reason */

/* A string: ptr is not NUL-terminated; len bytes of UTF-8. */
typedef struct {
    const char *ptr;
    size_t len;
} ts_str;

/* The arguments of one call: a JSON object (opaque). */
typedef struct ts_args ts_args;

/* The result of one call being built (opaque). */
typedef struct ts_result ts_result;

/* A JSON writer (the structured part of a result). */
typedef struct ts_json ts_json;

/* A tool's handler. */
typedef void (*ts_handler)(const ts_args *args, ts_result *result);

/* ts_handle registers a handler for a tool named in the manifest. Call it
 * before the first call, from a constructor (TS_TOOL does): constructors
 * run in _initialize. A second handler for the same name replaces the
 * first. At most 64 tools. */
void ts_handle(const char *tool, ts_handler handler);

#define TS_TOOL(name, fn) \
    __attribute__((constructor)) static void ts__register_##fn(void) { ts_handle(name, fn); }

/* ---- Arguments (JSON in). The host has checked them against the tool's
 * JSON Schema before the call, so a schema that requires a key and gives
 * its type makes these helpers' errors impossible. ---- */

/* The whole arguments object as JSON text. */
ts_str ts_args_json(const ts_args *args);

/* A string argument, unescaped (UTF-8). */
int ts_arg_string(const ts_args *args, const char *key, ts_str *out);
/* An integer argument (a JSON number without fraction that fits). */
int ts_arg_int(const ts_args *args, const char *key, long long *out);
/* A number argument. */
int ts_arg_double(const ts_args *args, const char *key, double *out);
/* A boolean argument (1 or 0). */
int ts_arg_bool(const ts_args *args, const char *key, int *out);
/* Any argument as its JSON text, as the model sent it. */
int ts_arg_raw(const ts_args *args, const char *key, ts_str *out);

/* Iterating over a JSON array (ts_arg_array, then ts_next until it
 * returns 0); each element is its JSON text. */
typedef struct {
    const char *p, *end;
} ts_iter;
int ts_arg_array(const ts_args *args, const char *key, ts_iter *it);
int ts_next(ts_iter *it, ts_str *element);

/* Looking into any JSON value (an element, a reply): the member key of
 * the object json, and a JSON string's text unescaped. */
int ts_json_member(ts_str json, const char *key, ts_str *out);
int ts_json_string(ts_str json, ts_str *out);

/* ---- The result (JSON out). ---- */

/* The text the model reads (replacing any before). */
void ts_text(ts_result *r, const char *s, size_t len);
/* ts_text with printf formatting. */
void ts_textf(ts_result *r, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* A tool error: the model reads msg and can try again. */
void ts_error(ts_result *r, const char *msg);
void ts_errorf(ts_result *r, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* The structured part of the result: write one JSON value with the
 * writer returned (again from the start on each call). Without a ts_text,
 * the model reads that JSON as the text (docs/ABI.md, "Content from
 * structured"). */
ts_json *ts_structured(ts_result *r);

/* The writer: commas and escaping are its business. An object's members
 * are ts_json_key then one value. */
void ts_json_object(ts_json *w);
void ts_json_end_object(ts_json *w);
void ts_json_array(ts_json *w);
void ts_json_end_array(ts_json *w);
void ts_json_key(ts_json *w, const char *key);
void ts_json_str(ts_json *w, const char *s, size_t len);
void ts_json_cstr(ts_json *w, const char *s);
void ts_json_int(ts_json *w, long long v);
void ts_json_double(ts_json *w, double v); /* NaN and infinities as null */
void ts_json_bool(ts_json *w, int v);
void ts_json_null(ts_json *w);
void ts_json_raw(ts_json *w, const char *json, size_t len); /* one valid JSON value */

/* ---- Capabilities (docs/ABI.md, "Host functions"). Each needs the
 * manifest to request it and the operator to grant it; otherwise the host
 * answers an error, which these return as TS_FAILED. ---- */

/* One host operation: op (e.g. "sql.query") with request JSON. TS_OK: *reply
 * is the "ok" value's JSON text; TS_FAILED: *reply is the reason. */
int ts_host_call(const char *op, const char *request, size_t len, ts_str *reply);
/* Writes to the host log ("debug", "info", "warn" or "error"). */
int ts_log(const char *level, const char *message);
/* A configuration value the operator set (the manifest's "config"). */
int ts_config_get(const char *key, ts_str *value);

/* The MCP client the call came from (docs/ABI.md, "The MCP client"): each
 * needs its feature in the manifest's "client" list and the operator's
 * grant, and fails (TS_FAILED, the reason in *reply or *text where there is
 * one) when the call did not come from an MCP client or the client lacks
 * the feature. */
/* A log message to the client, at one of MCP's levels ("debug", "info",
 * "notice", "warning", "error", ...). */
int ts_client_log(const char *level, const char *message);
/* The call's progress (increasing; total 0 when unknown); *sent is 0 when
 * the client asked for no progress (nothing was sent). */
int ts_progress(double progress, double total, int *sent);
/* One prompt to the client's model (max_tokens 0: the host's default);
 * *text is the answer. */
int ts_sample_text(const char *prompt, int max_tokens, ts_str *text);
/* A form for the client's user: schema_json is a flat JSON Schema object;
 * *reply is the reply's JSON, {"action": "accept", "content": {...}}. */
int ts_elicit(const char *message, const char *schema_json, ts_str *reply);

#ifdef __cplusplus
}
#endif
#endif
