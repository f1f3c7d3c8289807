package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// demoSQL is the demo SQLite database as database "default".
func demoSQL(t *testing.T) *sqlcap.Service {
	t.Helper()
	db := filepath.Join(t.TempDir(), "demo.db")
	if err := sqlcap.EnsureDemo(db); err != nil {
		t.Fatal(err)
	}
	svc, err := sqlcap.Open([]sqlcap.Database{{Name: "default", Driver: "sqlite", DSN: db}}, sqlcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// sqlHost is a host over the sql plugin and the demo SQLite database.
func sqlHost(t *testing.T) *host.Host {
	t.Helper()
	svc := demoSQL(t)
	snap, err := catalog.Load(wasmbuild.Bundled(t, "../..", "sql"), nil)
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	rt, err := wasm.New(&wasm.Options{CacheDir: filepath.Join(os.TempDir(), "toolshed-test-cache"), SQL: svc,
		Grants: map[string]wasm.Grants{"sql": {SQL: "default"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	h, err := host.New(host.Options{Client: openai.NewClientWithConfig(openai.DefaultConfig("")), Model: "none",
		Catalog: func() *catalog.Snapshot { return snap }, Runtime: rt, Search: host.SearchOptions{Mode: host.ModeKeyword}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// slowSQL runs until the plugin's timeout (30 s) unless cancelled.
const slowSQL = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 5000000000) SELECT count(*) FROM c`

func callLine(id int, name string, args any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	return string(b)
}

// afterCancelOK checks the result of the call after a cancel: no error,
// the query's answer.
func afterCancelOK(t *testing.T, run int, m rpcMsg) {
	t.Helper()
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(m.Result, &res)
	if m.Error != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "42") {
		t.Fatalf("run %d: the call after a cancelled one failed: %s %+v", run, m.Result, m.Error)
	}
}

// TestCancelThenCallStdio: notifications/cancelled stops a slow
// executeSql; the session's next call gets a fresh instance and its
// answer, not an error, 20 times in a row in one session.
func TestCancelThenCallStdio(t *testing.T) {
	h := sqlHost(t)
	c, _ := startStdio(t, h)
	c.send(initBody)
	c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(callLine(2, "tool_search", map[string]any{"query": "execute sql query"}))
	for m := c.next(); m.ID == nil; m = c.next() {
	}
	id := 10
	for run := 1; run <= 20; run++ {
		slow := id
		c.send(callLine(slow, "executeSql", map[string]any{"sql": slowSQL}))
		time.Sleep(50 * time.Millisecond) // the call is under way (or not yet: either must hold)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user"}}`, slow))
		c.send(callLine(slow+1, "executeSql", map[string]any{"sql": "SELECT 42 AS answer"}))
		m := c.next()
		if m.ID == float64(slow) {
			t.Fatalf("run %d: the cancelled call was answered: %s", run, m.Result)
		}
		if m.ID != float64(slow+1) {
			t.Fatalf("run %d: %+v", run, m)
		}
		afterCancelOK(t, run, m)
		id += 2
	}
}

// TestCancelThenCallHTTP is TestCancelThenCallStdio over streamable HTTP.
func TestCancelThenCallHTTP(t *testing.T) {
	h := sqlHost(t)
	_, url := serveMCP(t, h, nil)
	c := &raw{t: t, url: url}
	c.initialize(true)
	c.post(callLine(2, "tool_search", map[string]any{"query": "execute sql query"}))
	id := 10
	for run := 1; run <= 20; run++ {
		slow := id
		done := make(chan []rpcMsg, 1)
		go func() {
			_, msgs := c.post(callLine(slow, "executeSql", map[string]any{"sql": slowSQL}))
			done <- msgs
		}()
		time.Sleep(50 * time.Millisecond)
		c.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user"}}`, slow))
		_, msgs := c.post(callLine(slow+1, "executeSql", map[string]any{"sql": "SELECT 42 AS answer"}))
		if len(msgs) == 0 {
			t.Fatalf("run %d: no answer", run)
		}
		afterCancelOK(t, run, msgs[len(msgs)-1])
		select {
		case msgs := <-done:
			for _, m := range msgs {
				if m.ID != nil {
					t.Fatalf("run %d: the cancelled call was answered: %s", run, m.Result)
				}
			}
		case <-time.After(time.Minute):
			t.Fatalf("run %d: the cancelled call's stream did not end", run)
		}
		id += 2
	}
}
