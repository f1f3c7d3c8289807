package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/toolshed/toolshed/bench/echo"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
)

// extismWay and extismFirstWay name the Extism plugin's rows.
const (
	extismWay      = "wasm, Extism ABI (Go, extism:host/env), warm instance"
	extismFirstWay = "wasm, Extism ABI, session's first call (no pool)"
)

// extismEcho builds the echo tool as an Extism plugin (echo/extism) and
// times its warm calls in one session and sessions' first calls without a
// pool, after checking it answers what the native function does. Its
// ratios are to rows[0] (native) and rows[1] (the Go plugin, warm).
func extismEcho(e *echoPlugin, tmp string, n int, want []byte, rows []callRow) ([]callRow, error) {
	ctx := context.Background()
	dir := filepath.Join(tmp, "extism")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	wasmPath := filepath.Join(dir, "echo.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", wasmPath, "./echo/extism")
	cmd.Dir = e.moduleDir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./echo/extism: %v\n%s", err, out)
	}
	code, err := os.ReadFile(wasmPath)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(code)
	man := `{"name": "echo", "version": "1.0.0", "abi": "extism", "wasm": "echo.wasm", "sha256": "` + hex.EncodeToString(sum[:]) + `",
	  "limits": {"timeout_ms": 60000},
	  "tools": [{"name": "echo", "description": "Echo a small JSON object", "export": "echo", "parameters": {"type": "object",
	    "properties": {"name": {"type": "string"}, "count": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}}]}`
	if err := os.WriteFile(filepath.Join(dir, "echo.json"), []byte(man), 0o644); err != nil {
		return nil, err
	}
	snap, err := catalog.Load(dir, &catalog.Options{RequireModules: true, CheckModule: wasm.CheckModule})
	if err != nil {
		return nil, err
	}
	tool, ok := snap.Tool("echo")
	if !ok {
		return nil, fmt.Errorf("the Extism echo was not admitted: %v", snap.Errors)
	}
	rt, err := newRuntime(tmp, -1)
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	args := json.RawMessage(echo.Example)
	s := rt.NewSession()
	defer s.Close(ctx)
	res, err := s.Call(ctx, tool, args)
	if err != nil {
		return nil, err
	}
	var native struct{ Structured json.RawMessage }
	json.Unmarshal(want, &native)
	if !bytes.Equal(res.Structured, native.Structured) {
		return nil, fmt.Errorf("the Extism plugin answered %s, the native function %s", res.Structured, native.Structured)
	}
	lat := make([]time.Duration, 0, 5*n)
	for i := 0; i < 5*n; i++ {
		t0 := time.Now()
		if _, err := s.Call(ctx, tool, args); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	out := []callRow{stats(extismWay, lat)}
	lat = lat[:0]
	for i := 0; i < n; i++ {
		t0 := time.Now()
		s := rt.NewSession()
		if _, err := s.Call(ctx, tool, args); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
		s.Close(ctx)
	}
	out = append(out, stats(extismFirstWay, lat))
	for i := range out {
		out[i].VsNative = float64(out[i].Mean) / float64(rows[0].Mean)
		out[i].VsWarmWasm = float64(out[i].Mean) / float64(rows[1].Mean)
	}
	return out, nil
}
