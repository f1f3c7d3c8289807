package host_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// analyst is a scripted model for the article's flagship scenario: it
// searches, then describes, validates, runs, calculates and charts, each
// step reading the previous tool's answer.
type analyst struct {
	t      *testing.T
	months []string
	sales  []float64
	calls  []string
}

const monthlySQL = "SELECT substr(order_date, 1, 7) AS month, ROUND(SUM(total), 2) AS sales FROM orders GROUP BY month ORDER BY month"

func (a *analyst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	var toolMsgs []openai.ChatCompletionMessage
	for _, m := range req.Messages {
		if m.Role == "tool" {
			toolMsgs = append(toolMsgs, m)
		}
	}
	call := func(name string, args any) {
		b, _ := json.Marshal(args)
		a.calls = append(a.calls, name)
		writeJSON(w, toolCall(fmt.Sprintf("c%d", len(toolMsgs)+1), name, string(b)))
	}
	switch len(toolMsgs) {
	case 0:
		call("tool_search", map[string]any{"query": "查表结构 执行SQL 计算增长率 折线图", "limit": 10})
	case 1:
		call("describeTables", map[string]any{"tables": []string{"orders"}})
	case 2:
		call("validateSql", map[string]any{"sql": monthlySQL})
	case 3:
		call("executeSql", map[string]any{"sql": monthlySQL})
	case 4:
		// Read the table the plugin returned: "month | sales" rows.
		for _, line := range strings.Split(toolMsgs[3].Content, "\n")[1:] {
			parts := strings.Split(line, " | ")
			if len(parts) != 2 {
				continue
			}
			v, err := strconv.ParseFloat(parts[1], 64)
			if err != nil {
				continue
			}
			a.months, a.sales = append(a.months, parts[0]), append(a.sales, v)
		}
		if len(a.sales) < 12 {
			a.t.Errorf("executeSql answered %q", toolMsgs[3].Content)
			writeJSON(w, openai.ChatCompletionMessage{Role: "assistant", Content: "failed"})
			return
		}
		call("calculate", map[string]any{"expression": fmt.Sprintf("(%v - %v) / %v * 100", a.sales[11], a.sales[0], a.sales[0]), "precision": 2})
	case 5:
		call("createLineChart", map[string]any{"title": "2025年月度销售额", "labels": a.months,
			"series": []map[string]any{{"name": "销售额", "values": a.sales}}, "x_label": "月份", "y_label": "销售额 (元)"})
	default:
		writeJSON(w, openai.ChatCompletionMessage{Role: "assistant", Content: "全年增长 " + toolMsgs[4].Content + "；" + toolMsgs[5].Content})
	}
}

func writeJSON(w http.ResponseWriter, msg openai.ChatCompletionMessage) {
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "x", Object: "chat.completion",
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: "stop"}}})
}

// bundledPlugins builds and pins the named bundled plugins into a directory.
func bundledPlugins(t *testing.T, names ...string) *catalog.Snapshot {
	t.Helper()
	snap, err := catalog.Load(wasmbuild.Bundled(t, "..", names...), nil)
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	return snap
}

// TestAnalystFlow is the article's scenario end to end: a Chinese request
// goes through tool_search → describe tables → validate SQL → execute SQL →
// calculate → line chart, every tool in its wasm plugin, and the chart's
// numbers match a direct query of the demo database.
func TestAnalystFlow(t *testing.T) {
	snap := bundledPlugins(t, "sql", "calculate", "chart")
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := sqlcap.EnsureDemo(dbPath); err != nil {
		t.Fatal(err)
	}
	svc, err := sqlcap.Open([]sqlcap.Database{{Name: "default", Driver: "sqlite", DSN: dbPath}}, sqlcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	artifacts := t.TempDir()
	rt, err := wasm.New(&wasm.Options{CacheDir: filepath.Join(os.TempDir(), "toolshed-test-cache"), SQL: svc,
		Grants: map[string]wasm.Grants{"sql": {SQL: "default"}, "chart": {Artifacts: artifacts}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	model := &analyst{t: t}
	srv := httptest.NewServer(model)
	defer srv.Close()
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL + "/v1"
	h, err := host.New(host.Options{Client: openai.NewClientWithConfig(cfg), Model: "m", Runtime: rt,
		Catalog: func() *catalog.Snapshot { return snap }})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Run(context.Background(), []openai.ChatCompletionMessage{{Role: "user", Content: "按月统计销售额并画成折线图"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Rounds {
		for _, c := range r.ToolCalls {
			if c.IsError {
				t.Errorf("round %d: %s failed", i+1, c.Name)
			}
		}
	}
	want := "tool_search describeTables validateSql executeSql calculate createLineChart"
	if got := strings.Join(model.calls, " "); got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	// The model is told of the artifact (the Host has no ArtifactLink: its name, type and size).
	if !strings.Contains(resp.Answer, "The line chart is stored as artifact ") || !strings.Contains(resp.Answer, "artifact 2025年月度销售额.svg (image/svg+xml, ") {
		t.Fatalf("answer %q", resp.Answer)
	}
	last := resp.Rounds[len(resp.Rounds)-2].ToolCalls[0]
	if last.Name != "createLineChart" || !strings.Contains(string(last.Structured), `"artifact":"`) || len(last.Artifacts) != 1 ||
		last.Artifacts[0].ContentType != "image/svg+xml" || filepath.Dir(last.Artifacts[0].Path) != artifacts {
		t.Fatalf("the chart call's structured result and artifact are not recorded: %+v", last)
	}

	// The chart's numbers are the database's.
	files, _ := filepath.Glob(filepath.Join(artifacts, "*.svg"))
	if len(files) != 1 {
		t.Fatalf("artifacts %v", files)
	}
	svg, _ := os.ReadFile(files[0])
	db, _ := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	defer db.Close()
	rows, err := db.Query(monthlySQL)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var month string
		var sales float64
		rows.Scan(&month, &sales)
		tip := fmt.Sprintf("<title>%s: %s</title>", month, strconv.FormatFloat(sales, 'f', -1, 64))
		if !strings.Contains(string(svg), tip) {
			t.Errorf("the chart lacks %s", tip)
		}
		n++
	}
	if n != 12 {
		t.Fatalf("%d months in the database", n)
	}
	growth := (model.sales[11] - model.sales[0]) / model.sales[0] * 100
	if !strings.Contains(resp.Answer, strconv.FormatFloat(math.Round(growth*100)/100, 'f', -1, 64)) {
		t.Errorf("answer %q lacks the growth %.2f", resp.Answer, growth)
	}
}
