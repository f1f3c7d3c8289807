package csdk_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// TestRequestForms calls the C example's exports directly with requests
// this host never writes but the ABI allows (any JSON object with "tool"
// and "arguments"): the SDK's fast path for the host's form must not
// misread them.
func TestRequestForms(t *testing.T) {
	ctx := context.Background()
	code := wasmbuild.C(t, "toolshed", "examples/echo/echo.c")
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	mod, err := r.InstantiateWithConfig(ctx, code, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	alloc, call := mod.ExportedFunction("toolshed_alloc"), mod.ExportedFunction("toolshed_call")
	do := func(req string) string {
		t.Helper()
		res, err := alloc.Call(ctx, uint64(len(req)))
		if err != nil {
			t.Fatal(err)
		}
		ptr := uint32(res[0])
		if !mod.Memory().Write(ptr, []byte(req)) {
			t.Fatal("write outside memory")
		}
		res, err = call.Call(ctx, uint64(ptr), uint64(len(req)))
		if err != nil {
			t.Fatal(err)
		}
		out, ok := mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
		if !ok {
			t.Fatal("result outside memory")
		}
		return string(out)
	}
	for req, want := range map[string]string{
		`{"tool":"echo","arguments":{"name":"a","count":1}}`:                       `{"structured":{"name":"a","count":1,"tags":null}}`,
		`{"tool":"echo","arguments":{"name":"a"},"extra":{"name":"b"}}`:            `{"structured":{"name":"a","count":0,"tags":null}}`,
		`{"tool":"echo","arguments":{"name":"}"},"x":{}}`:                          `{"structured":{"name":"}","count":0,"tags":null}}`,
		`{"arguments":{"name":"c","tags":["t"]},"tool":"echo"}`:                    `{"structured":{"name":"c","count":0,"tags":["t"]}}`,
		" { \"tool\" : \"ec\\u0068o\" ,\n \"arguments\" : { \"name\" : \"d\" } } ": `{"structured":{"name":"d","count":0,"tags":null}}`,
		`{"tool":"echo"}`: `{"structured":{"name":"","count":0,"tags":null}}`,
		`{"tool":"echo","arguments":{"name":"a","name":"e"}}`: `{"structured":{"name":"e","count":0,"tags":null}}`,
		`{"tool":"nope","arguments":{}}`:                      `{"content":"this plugin has no tool nope","is_error":true}`,
		`{"arguments":{}}`:                                    `{"content":"the request names no tool","is_error":true}`,
	} {
		if got := do(req); got != want {
			t.Errorf("%s:\n have %s\n want %s", req, got, want)
		}
		if !json.Valid([]byte(do(req))) {
			t.Errorf("%s: the result is not JSON", req)
		}
	}
}
