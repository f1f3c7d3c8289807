/* kit: a test plugin exercising every part of the C SDK (c_test.go). */
#include "toolshed.h"

static const char *rc_name(int rc) {
    switch (rc) {
    case TS_OK: return "ok";
    case TS_ABSENT: return "absent";
    case TS_WRONG_TYPE: return "wrong type";
    case TS_FAILED: return "failed";
    }
    return "?";
}

/* args: every argument helper on the keys s, n, x, b, r, list; the
 * structured result says what each returned. */
static void args(const ts_args *a, ts_result *r) {
    ts_str s, raw, e;
    long long n;
    double x;
    int b, rc;
    ts_iter it;
    ts_json *w = ts_structured(r);
    ts_json_object(w);
    ts_json_key(w, "s");
    if ((rc = ts_arg_string(a, "s", &s)) == TS_OK) ts_json_str(w, s.ptr, s.len); else ts_json_cstr(w, rc_name(rc));
    ts_json_key(w, "n");
    if ((rc = ts_arg_int(a, "n", &n)) == TS_OK) ts_json_int(w, n); else ts_json_cstr(w, rc_name(rc));
    ts_json_key(w, "x");
    if ((rc = ts_arg_double(a, "x", &x)) == TS_OK) ts_json_double(w, x); else ts_json_cstr(w, rc_name(rc));
    ts_json_key(w, "b");
    if ((rc = ts_arg_bool(a, "b", &b)) == TS_OK) ts_json_bool(w, b); else ts_json_cstr(w, rc_name(rc));
    ts_json_key(w, "r");
    if ((rc = ts_arg_raw(a, "r", &raw)) == TS_OK) ts_json_raw(w, raw.ptr, raw.len); else ts_json_cstr(w, rc_name(rc));
    ts_json_key(w, "list");
    if ((rc = ts_arg_array(a, "list", &it)) == TS_OK) {
        ts_json_array(w);
        while (ts_next(&it, &e)) ts_json_raw(w, e.ptr, e.len);
        ts_json_end_array(w);
    } else {
        ts_json_cstr(w, rc_name(rc));
    }
    ts_json_key(w, "nested");
    if (ts_arg_raw(a, "r", &raw) == TS_OK && ts_json_member(raw, "k", &e) == TS_OK && ts_json_string(e, &s) == TS_OK) {
        ts_json_str(w, s.ptr, s.len);
    } else {
        ts_json_null(w);
    }
    ts_json_key(w, "special");
    ts_json_array(w);
    ts_json_double(w, 0.0 / 0.0);
    ts_json_double(w, 0.5);
    ts_json_null(w);
    ts_json_cstr(w, "tab\there \"q\" \\ \x01");
    ts_json_end_array(w);
    ts_json_end_object(w);
}
TS_TOOL("args", args)

/* size: the byte length of s (a request over the 16 KiB buffer goes
 * through toolshed_alloc). */
static void size(const ts_args *a, ts_result *r) {
    ts_str s;
    if (ts_arg_string(a, "s", &s) != TS_OK) {
        ts_error(r, "s is missing");
        return;
    }
    ts_textf(r, "%zu", s.len);
}
TS_TOOL("size", size)

/* caps: log, config.get and an operation nobody grants. */
static void caps(const ts_args *a, ts_result *r) {
    ts_str v, reply;
    (void)a;
    int logged = ts_log("info", "hello from C");
    int got = ts_config_get("kit.greeting", &v);
    static const char query[] = "{\"sql\": \"SELECT 1\"}";
    int sql = ts_host_call("sql.query", query, sizeof query - 1, &reply);
    ts_json *w = ts_structured(r);
    ts_json_object(w);
    ts_json_key(w, "log");
    ts_json_cstr(w, rc_name(logged));
    ts_json_key(w, "config");
    ts_json_cstr(w, rc_name(got));
    ts_json_key(w, "value");
    ts_json_str(w, v.ptr, v.len);
    ts_json_key(w, "sql");
    ts_json_cstr(w, rc_name(sql));
    ts_json_key(w, "sql_reason");
    ts_json_str(w, reply.ptr, reply.len);
    ts_json_end_object(w);
}
TS_TOOL("caps", caps)

/* client: every client.* helper, in order; what each returned. */
static void client(const ts_args *a, ts_result *r) {
    ts_str text = {0}, reply = {0};
    int sent = -1;
    (void)a;
    int logged = ts_client_log("info", "hello \"client\" from C");
    int progressed = ts_progress(50, 100, &sent);
    int sampled = ts_sample_text("say \"hi\"", 0, &text);
    int elicited = ts_elicit("Your name?", "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}", &reply);
    ts_json *w = ts_structured(r);
    ts_json_object(w);
    ts_json_key(w, "log");
    ts_json_cstr(w, rc_name(logged));
    ts_json_key(w, "progress");
    ts_json_cstr(w, rc_name(progressed));
    ts_json_key(w, "sent");
    ts_json_int(w, sent);
    ts_json_key(w, "sample");
    ts_json_cstr(w, rc_name(sampled));
    ts_json_key(w, "text");
    ts_json_str(w, text.ptr, text.len);
    ts_json_key(w, "elicit");
    ts_json_cstr(w, rc_name(elicited));
    ts_json_key(w, "reply");
    ts_json_str(w, reply.ptr, reply.len);
    ts_json_end_object(w);
}
TS_TOOL("client", client)

/* fail: a tool error with printf formatting; text and structured both. */
static void fail(const ts_args *a, ts_result *r) {
    long long n = 0;
    ts_arg_int(a, "n", &n);
    ts_errorf(r, "no row %lld; try 1 to 3", n);
    ts_json *w = ts_structured(r);
    ts_json_object(w);
    ts_json_key(w, "n");
    ts_json_int(w, n);
    ts_json_end_object(w);
}
TS_TOOL("fail", fail)
