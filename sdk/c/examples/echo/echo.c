/*
 * echo: the C twin of the benchmark's Go echo tool (bench/echo): it
 * decodes a small object {"name", "count", "tags"} and returns it as the
 * structured result, the work of a small tool. Build it with
 *
 *     make -C sdk/c/examples/echo
 *
 * which runs clang --target=wasm32-wasi -O2 -mexec-model=reactor and pins
 * the module into echo.json.
 */
#include "toolshed.h"

static void echo(const ts_args *a, ts_result *r) {
    ts_str name = {"", 0};
    long long count = 0;
    ts_iter tags;
    ts_arg_string(a, "name", &name);
    ts_arg_int(a, "count", &count);
    ts_json *w = ts_structured(r);
    ts_json_object(w);
    ts_json_key(w, "name");
    ts_json_str(w, name.ptr, name.len);
    ts_json_key(w, "count");
    ts_json_int(w, count);
    ts_json_key(w, "tags");
    if (ts_arg_array(a, "tags", &tags) == TS_OK) {
        ts_str e, s;
        ts_json_array(w);
        while (ts_next(&tags, &e)) {
            if (ts_json_string(e, &s) == TS_OK) ts_json_str(w, s.ptr, s.len);
        }
        ts_json_end_array(w);
    } else {
        ts_json_null(w);
    }
    ts_json_end_object(w);
}
TS_TOOL("echo", echo)
