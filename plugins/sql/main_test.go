package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

func demoDB(t *testing.T, path string) {
	t.Helper()
	if err := sqlcap.EnsureDemo(path); err != nil {
		t.Fatal(err)
	}
}

func demoPlugin(t *testing.T) *plugintest.Plugin {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.db")
	demoDB(t, path)
	svc, err := sqlcap.Open([]sqlcap.Database{{Name: "default", Driver: "sqlite", DSN: path}}, sqlcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/sql.json",
		Grants: wasm.Grants{SQL: "default", Log: true}, SQL: svc})
}

func TestSQLPlugin(t *testing.T) {
	p := demoPlugin(t)
	res := p.Call("listTables", map[string]any{})
	if res.IsError || !strings.Contains(res.Content, "orders (") || !strings.Contains(res.Content, "订单 Orders") {
		t.Fatalf("listTables: %+v", res)
	}
	res = p.Call("describeTables", map[string]any{"tables": []string{"orders"}})
	if res.IsError || !strings.Contains(res.Content, "customer_id INTEGER [references customers(customer_id)]") ||
		!strings.Contains(res.Content, "order_id INTEGER [primary key]") || !strings.Contains(res.Content, "-- 下单日期") {
		t.Fatalf("describeTables: %s", res.Content)
	}
	res = p.Call("describeTables", map[string]any{"tables": []string{"ordrs"}})
	if !res.IsError || !strings.Contains(res.Content, "did you mean `orders`") {
		t.Fatalf("unknown table: %+v", res)
	}
	res = p.Call("validateSql", map[string]any{"sql": "SELECT SUM(total) FROM ordrs"})
	if !res.IsError || !strings.Contains(res.Content, "no such table: ordrs") || !strings.Contains(res.Content, "did you mean `orders`") {
		t.Fatalf("validate typo: %+v", res)
	}
	res = p.Call("validateSql", map[string]any{"sql": "SELECT SUM(totl) FROM orders"})
	if !res.IsError || !strings.Contains(res.Content, "did you mean `total`") {
		t.Fatalf("validate column typo: %+v", res)
	}
	res = p.Call("validateSql", map[string]any{"sql": "SELECT substr(order_date,1,7) m, SUM(total) FROM orders GROUP BY m"})
	if res.IsError || !strings.HasPrefix(res.Content, "valid.") {
		t.Fatalf("validate: %+v", res)
	}
	res = p.Call("executeSql", map[string]any{"sql": "SELECT substr(order_date,1,7) AS month, ROUND(SUM(total),2) AS sales FROM orders GROUP BY month ORDER BY month"})
	var rows struct {
		Columns []string
		Rows    [][]any
	}
	if res.IsError || json.Unmarshal(res.Structured, &rows) != nil || len(rows.Rows) != 12 || rows.Columns[1] != "sales" {
		t.Fatalf("execute: %+v", res)
	}
	res = p.Call("executeSql", map[string]any{"sql": "SELECT * FROM order_items", "max_rows": 5})
	if res.IsError || !strings.HasSuffix(res.Content, "(5 rows, truncated)") {
		t.Fatalf("max_rows: %s", res.Content)
	}
	res = p.Call("executeSql", map[string]any{"sql": "DELETE FROM orders"})
	if !res.IsError || !strings.Contains(res.Content, "only SELECT") {
		t.Fatalf("delete: %+v", res)
	}
}
