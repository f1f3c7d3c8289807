package wasm_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/wasm"
)

func TestSnapTmp(t *testing.T) {
	snap := writePlugins(t, spec{name: "benchkit", module: module(t, "benchkit"), tools: []string{"echo"}})
	h, logs := newHost(t, &wasm.Options{PoolSize: -1})
	for i := 0; i < 5; i++ {
		s := h.NewSession()
		start := time.Now()
		res, err := call(t, s, snap, "echo", `{"name":"a","count":1,"tags":["x"]}`)
		t.Log(time.Since(start), res.Content, err)
		s.Close(context.Background())
	}
	t.Logf("%+v", h.Stats())
	t.Log(logs.String())
}
