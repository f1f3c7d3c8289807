package main

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/scripted"
)

// TestHostileSQLSessions (class 2 of the hostile suite): what one session
// does to its database connection must not be what the next session reads.
// Through the real path: toolshed serve, MCP over HTTP, one MCP session
// per attacker and per victim, the bundled sql plugin on the demo database.
func TestHostileSQLSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sql plugin")
	}
	e := newHostileEnv(t, "")
	t.Setenv("XDG_DATA_HOME", e.data)
	grants, _ := e.bundledSQLInProcess()
	s := startServe(t, &scripted.Model{}, map[string]string{"plugins.dir": e.plugins, "plugins.grants": grants})
	session := func() *mcp.ClientSession {
		cs, _ := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp"}, "")
		if text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "select:executeSql"}); isErr || !strings.Contains(text, "executeSql") {
			t.Fatalf("tool_search: %q", text)
		}
		return cs
	}
	attacker := session()
	for _, stmt := range []string{
		"CREATE TEMP VIEW orders AS SELECT 'pwned' AS order_id",
		"SELECT 1 AS a$q$; CREATE TEMP VIEW orders AS SELECT 'pwned' AS order_id; SELECT 2 AS b$q$",
		"CREATE TEMP TABLE customers(name)",
		"PRAGMA temp_store_directory = '/tmp'",
	} {
		text, isErr := callText(t, attacker, "executeSql", map[string]any{"sql": stmt})
		if !isErr {
			t.Errorf("%s: accepted: %s", stmt, text)
		}
	}
	for i := 0; i < 4; i++ {
		victim := session()
		text, isErr := callText(t, victim, "executeSql", map[string]any{"sql": "SELECT order_id FROM orders ORDER BY order_id LIMIT 1"})
		if isErr || strings.Contains(text, "pwned") {
			t.Fatalf("victim %d read: %q (error %v)", i, text, isErr)
		}
		text, isErr = callText(t, victim, "executeSql", map[string]any{"sql": "SELECT COUNT(*) FROM sqlite_temp_master"})
		if isErr || !strings.Contains(text, "0") {
			t.Fatalf("victim %d sees temporary objects: %q (error %v)", i, text, isErr)
		}
	}
}
