package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// TestSQLPluginPostgres runs the plugin against a real PostgreSQL server
// holding the demo data (skipped, saying why, where none can be started).
func TestSQLPluginPostgres(t *testing.T) {
	dsn := pgtest.Start(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := sqlcap.LoadDemoPostgres(context.Background(), admin); err != nil {
		t.Fatal(err)
	}
	svc, err := sqlcap.Open([]sqlcap.Database{{Name: "dw", Driver: "postgres", DSN: pgtest.ReadOnlyRole(t, dsn, "reader")}}, sqlcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	p := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/sql.json",
		Grants: wasm.Grants{SQL: "dw"}, SQL: svc})
	expect := func(tool string, args map[string]any, isErr bool, wants ...string) {
		t.Helper()
		res := p.Call(tool, args)
		if res.IsError != isErr {
			t.Fatalf("%s %v: %+v", tool, args, res)
		}
		for _, w := range wants {
			if !strings.Contains(res.Content, w) {
				t.Errorf("%s %v: %q lacks %q", tool, args, res.Content, w)
			}
		}
	}
	expect("listTables", map[string]any{}, false, "orders (3151 rows): 订单 Orders")
	expect("describeTables", map[string]any{"tables": []string{"orders"}}, false,
		"order_id integer [primary key]", "customer_id integer [references customers(customer_id)]", "-- 下单日期")
	expect("validateSql", map[string]any{"sql": "SELECT SUM(total) FROM ordrs"}, true, `relation "ordrs" does not exist`, "did you mean `orders`")
	expect("validateSql", map[string]any{"sql": "SELECT SUM(totl) FROM orders"}, true, "did you mean `total`")
	expect("validateSql", map[string]any{"sql": "SELECT city, COUNT(*) FROM customers GROUP BY city"}, false, "valid. Plan:")
	expect("executeSql", map[string]any{"sql": "SELECT COUNT(*) AS n FROM customers WHERE city = $1", "params": []any{"北京"}}, false, "n\n")
	expect("executeSql", map[string]any{"sql": "UPDATE orders SET total = 0"}, true, "only SELECT")
}
