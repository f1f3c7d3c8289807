package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/abi"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// blockingSQL holds every query until its context ends, then answers with
// that context's error (as a database driver does); other queries when
// its gate is open.
type blockingSQL struct{ started chan struct{} }

func (b blockingSQL) QuerySQL(ctx context.Context, db string, req abi.SQLRequest) (*abi.SQLReply, error) {
	if req.SQL != "slow" {
		return &abi.SQLReply{Columns: []string{"answer"}, Rows: [][]any{{42}}}, nil
	}
	b.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCancelledCallDiscardsInstance: a call whose context ends while the
// plugin waits in a host call comes back (the plugin turns the host
// call's error into its own result), but wazero closes the module
// (WithCloseOnContextDone) from a goroutine that may run only later, in
// the session's next call. The instance is therefore discarded as the
// cancelled call returns, whatever it returned, and the next call of the
// session gets a fresh instance and its answer: 20 times in a row in one
// session, each checked at once (no retry in this package).
func TestCancelledCallDiscardsInstance(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "caps.json")
	os.WriteFile(manifest, []byte(`{"name": "caps", "version": "1.0.0", "abi_version": 1, "wasm": "caps.wasm", "sha256": "`+strings.Repeat("0", 64)+`",
		"capabilities": {"sql": true}, "tools": [`+toolList("query")+`]}`), 0o644)
	db := blockingSQL{started: make(chan struct{})}
	p := plugintest.New(t, plugintest.Config{Dir: "testdata/plugins/caps", Manifest: manifest, SQL: db,
		Grants: wasm.Grants{SQL: "analytics"}})
	tool, _ := p.Snapshot.Tool("query")
	for run := 1; run <= 20; run++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := p.Session.Call(ctx, tool, json.RawMessage(`{"sql": "slow"}`))
			done <- err
		}()
		select {
		case <-db.started:
		case <-time.After(time.Minute):
			t.Fatalf("run %d: the slow query did not start", run)
		}
		cancel()
		<-done // a result or an error: either way the instance is gone
		if n := p.Session.Instances(); n != 0 {
			t.Fatalf("run %d: the session still holds %d instance(s) after a call whose context ended", run, n)
		}
		res, err := p.Session.Call(context.Background(), tool, json.RawMessage(`{"sql": "fast"}`))
		if err != nil || res.IsError || !strings.Contains(res.Content, "42") {
			t.Fatalf("run %d: the call after a cancelled one: %+v %v", run, res, err)
		}
		if n := p.Session.Instances(); n != 1 {
			t.Fatalf("run %d: %d instances after a good call, want 1 (kept for the next)", run, n)
		}
	}
}

// TestCancelledCompileNotRemembered: a first call whose context ends
// while it waits to compile the plugin fails with its context's error,
// and that failure is not remembered as the module's: the next call
// compiles and runs. (Before, the plugin's version was marked "not valid
// WebAssembly" for good: one client cancelling its first call broke the
// plugin for every other.)
func TestCancelledCompileNotRemembered(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "caps.json")
	os.WriteFile(manifest, []byte(`{"name": "caps", "version": "1.0.0", "abi_version": 1, "wasm": "caps.wasm", "sha256": "`+strings.Repeat("0", 64)+`",
		"capabilities": {"sql": true}, "tools": [`+toolList("query")+`]}`), 0o644)
	p := plugintest.New(t, plugintest.Config{Dir: "testdata/plugins/caps", Manifest: manifest, SQL: blockingSQL{},
		Grants: wasm.Grants{SQL: "analytics"}})
	tool, _ := p.Snapshot.Tool("query")
	release := wasm.HoldCompileSlots(p.Host) // the compile waits for a slot...
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // ...and its caller has gone
	_, err := p.Session.Call(ctx, tool, json.RawMessage(`{"sql": "fast"}`))
	release()
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "not valid WebAssembly") {
		t.Fatalf("the cancelled first call: %v, want its context's error", err)
	}
	res, err := p.Session.Call(context.Background(), tool, json.RawMessage(`{"sql": "fast"}`))
	if err != nil || res.IsError || !strings.Contains(res.Content, "42") {
		t.Fatalf("the next call: %+v %v", res, err)
	}
}
