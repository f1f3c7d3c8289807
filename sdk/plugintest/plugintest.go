// Package plugintest runs a plugin under the real Toolshed host in go test:
// it compiles the plugin's main package to WebAssembly with the standard
// toolchain, pins the module's sha256 into a copy of its manifest, and
// calls its tools through the same path as "toolshed call" (manifest →
// sha256 check → compile → instance → call).
//
//	func TestSlugify(t *testing.T) {
//		p := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "textkit.json"})
//		res := p.Call("slugify", map[string]any{"text": "Hello, World"})
//		if res.Content != "hello-world" { t.Fatal(res.Content) }
//	}
//
// This package runs on the host (it imports the runtime); the plugin itself
// imports only package sdk. A Plugin is safe for concurrent use.
package plugintest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
	"github.com/toolshed/toolshed/sdk/abi"
)

// Config says what to build and how to run it.
type Config struct {
	// Dir is the plugin's main package ("." for the package under test).
	// Empty: Module must be set.
	Dir string
	// Module is a prebuilt .wasm file, used when Dir is empty.
	Module string
	// Manifest is the plugin's manifest file. Its "wasm" and "sha256" are
	// rewritten in a temporary copy to point at the module just built.
	Manifest string
	// Grants are the operator's grants for this plugin.
	Grants wasm.Grants
	// Caps bound the manifest's limits.
	Caps wasm.Caps
	// SQL serves the "sql" capability.
	SQL wasm.SQLRunner
	// Logger receives the host's log; nil logs through t.Log.
	Logger *slog.Logger
}

// Plugin is a plugin loaded in a host, with one session.
type Plugin struct {
	t        testing.TB
	Host     *wasm.Host
	Session  *wasm.Session
	Snapshot *catalog.Snapshot
}

// Build compiles the main package at dir to a WebAssembly module (once per
// test process) and returns its path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	return wasmbuild.Build(t, dir)
}

var (
	wasmField   = regexp.MustCompile(`("wasm"\s*:\s*")[^"]*(")`)
	sha256Field = regexp.MustCompile(`("sha256"\s*:\s*")[^"]*(")`)
)

// New builds (or takes) the module, loads it with its manifest into a real
// host and starts a session; everything is closed when the test ends.
func New(t testing.TB, cfg Config) *Plugin {
	t.Helper()
	module := cfg.Module
	if cfg.Dir != "" {
		module = Build(t, cfg.Dir)
	}
	if module == "" || cfg.Manifest == "" {
		t.Fatal("plugintest: Config needs Dir or Module, and Manifest")
	}
	dir, name := Pin(t, module, cfg.Manifest)
	snap, err := catalog.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 {
		t.Fatalf("plugintest: manifest: %v", snap.Errors)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	host, err := wasm.New(&wasm.Options{
		Grants: map[string]wasm.Grants{name: cfg.Grants},
		Caps:   cfg.Caps,
		SQL:    cfg.SQL,
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &Plugin{t: t, Host: host, Session: host.NewSession(), Snapshot: snap}
	t.Cleanup(func() {
		p.Session.Close(context.Background())
		host.Close(context.Background())
	})
	return p
}

// Pin writes a plugin directory for module and a copy of manifest whose
// "wasm" and "sha256" name that module, and returns the directory and the
// plugin's name: a catalog to load into a host of one's own (an MCP
// server's, for instance).
func Pin(t testing.TB, module, manifest string) (dir, name string) {
	t.Helper()
	code, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(code)
	var m struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(man, &m); err != nil {
		t.Fatalf("plugintest: %s: %v", manifest, err)
	}
	dir = t.TempDir()
	man = wasmField.ReplaceAll(man, []byte("${1}"+m.Name+".wasm${2}"))
	man = sha256Field.ReplaceAll(man, []byte("${1}"+hex.EncodeToString(sum[:])+"${2}"))
	if err := os.WriteFile(filepath.Join(dir, m.Name+".wasm"), code, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, m.Name+".json"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, m.Name
}

// CallErr calls a tool with arguments (any JSON-encodable value, or
// json.RawMessage) and returns the result and the host's error.
func (p *Plugin) CallErr(tool string, args any) (abi.Result, error) {
	p.t.Helper()
	return p.CallClient(nil, tool, args)
}

// CallClient is CallErr for a call that came from the MCP client c: the
// plugin's client.* operations (log, progress, sample, elicit) reach c,
// within the host's limits. A nil c is a call no MCP client made.
func (p *Plugin) CallClient(c wasm.Client, tool string, args any) (abi.Result, error) {
	p.t.Helper()
	tl, ok := p.Snapshot.Tool(tool)
	if !ok {
		p.t.Fatalf("plugintest: the manifest has no tool %q", tool)
	}
	raw, ok := args.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			p.t.Fatal(err)
		}
		raw = b
	}
	return p.Session.Call(wasm.WithClient(context.Background(), c), tl, raw)
}

// Call calls a tool and fails the test on a host error (a tool error is a
// normal result: check Result.IsError).
func (p *Plugin) Call(tool string, args any) abi.Result {
	p.t.Helper()
	res, err := p.CallErr(tool, args)
	if err != nil {
		p.t.Fatalf("plugintest: %s: %v", tool, err)
	}
	return res
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(b, "\n")))
	return len(b), nil
}
