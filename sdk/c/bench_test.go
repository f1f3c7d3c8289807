package csdk_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolshed/toolshed/internal/wasmbuild"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// BenchmarkEchoWarm is one warm call of the C example echo through the
// real host (schema check, request, export call, result): what the ABI
// itself costs. The benchmark module's call-cost table compares it with
// the Go plugin and the native function (cd bench && go run . -only calls).
func BenchmarkEchoWarm(b *testing.B) {
	code := wasmbuild.C(b, "toolshed", "examples/echo/echo.c")
	p := plugintest.New(b, plugintest.Config{Module: writeModule(b, code), Manifest: "examples/echo/echo.json"})
	tool, _ := p.Snapshot.Tool("echo")
	args := json.RawMessage(`{"name":"quarterly revenue report","count":42,"tags":["finance","q3","revenue","draft","internal"]}`)
	ctx := context.Background()
	if _, err := p.Session.Call(ctx, tool, args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Session.Call(ctx, tool, args); err != nil {
			b.Fatal(err)
		}
	}
}
