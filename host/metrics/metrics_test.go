package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host"
)

func TestSeries(t *testing.T) {
	var none *Metrics // a nil *Metrics records nothing and does not panic
	none.MCPRefused()
	none.MCPKeyRefused()
	none.MCPClosed("ended")
	none.SessionStarted("mcp")()
	none.ObserveCall(&host.ToolCallRecord{Name: "x"})
	none.ObserveHTTP("/", 200, 0)

	m := New(Options{Known: func(name string) bool { return name == "slugify" }})
	m.MCPRefused()
	m.MCPKeyRefused()
	m.MCPKeyRefused()
	m.MCPClosed("evicted")
	m.MCPClosed("evicted")
	end := m.SessionStarted("mcp")
	m.ObserveCall(&host.ToolCallRecord{Name: "slugify", Plugin: "textkit"})
	m.ObserveCall(&host.ToolCallRecord{Name: "madeUp", Plugin: "textkit", IsError: true})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"toolshed_mcp_sessions_refused_total 1",
		"toolshed_mcp_sessions_key_refused_total 2",
		`toolshed_mcp_sessions_closed_total{reason="evicted"} 2`,
		`toolshed_sessions_active{front="mcp"} 1`,
		`toolshed_tool_calls_total{outcome="ok",plugin="textkit",tool="slugify"} 1`,
		`toolshed_tool_calls_total{outcome="error",plugin="textkit",tool="unknown"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
	end()
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body, _ := io.ReadAll(rec.Body); !strings.Contains(string(body), `toolshed_sessions_active{front="mcp"} 0`) {
		t.Error("the session did not end")
	}
}

// TestMCPKeySessions: the gauge of one key's MCP sessions follows them,
// labelled by the first 12 characters of the tenant id, an end counted
// once, and the key's series gone with its last session.
func TestMCPKeySessions(t *testing.T) {
	var none *Metrics
	none.MCPKeySession("x")()
	m := New(Options{})
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	const tenant = "0123456789abcdef0123"
	end1, end2 := m.MCPKeySession(tenant), m.MCPKeySession(tenant)
	endNone := m.MCPKeySession("")
	if body := scrape(); !strings.Contains(body, `toolshed_mcp_key_sessions{key="0123456789ab"} 2`) || !strings.Contains(body, `toolshed_mcp_key_sessions{key="none"} 1`) {
		t.Fatalf("two sessions of one key, one of none:\n%s", body)
	}
	end1()
	end1()
	if body := scrape(); !strings.Contains(body, `toolshed_mcp_key_sessions{key="0123456789ab"} 1`) {
		t.Fatalf("one ended (twice):\n%s", body)
	}
	end2()
	endNone()
	if body := scrape(); strings.Contains(body, "toolshed_mcp_key_sessions{") {
		t.Fatalf("every session ended, a key's series is left:\n%s", body)
	}
}
