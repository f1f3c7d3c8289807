package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

var report = flag.Bool("report", false, "print the SQL cost report")

const reportSQL = "SELECT substr(order_date, 1, 7) AS month, ROUND(SUM(total), 2) AS sales FROM orders GROUP BY month ORDER BY month"

// TestSQLCostReport compares executeSql through the plugin and the host
// function with the same query through database/sql in-process, in one run:
//
//	go test -run SQLCostReport -v ./plugins/sql -args -report
func TestSQLCostReport(t *testing.T) {
	if !*report {
		t.Skip("pass -args -report")
	}
	p := demoPlugin(t)
	args := map[string]any{"sql": reportSQL}
	p.Call("executeSql", args) // instance and caches warm
	plugin := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if res := p.Call("executeSql", args); res.IsError {
				b.Fatal(res.Content)
			}
		}
	})
	path := filepath.Join(t.TempDir(), "demo.db")
	demoDB(t, path)
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	direct := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			rows, err := db.QueryContext(context.Background(), reportSQL)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
				var m string
				var s float64
				rows.Scan(&m, &s)
			}
			rows.Close()
		}
	})
	pn, dn := time.Duration(plugin.NsPerOp()), time.Duration(direct.NsPerOp())
	fmt.Printf("\nexecuteSql, monthly sales over 3,151 orders (12 rows), one run:\n")
	fmt.Printf("  through the plugin and host function: %s\n  database/sql in-process:              %s\n  ratio: %.1f×, overhead %s\n",
		pn.Round(time.Microsecond), dn.Round(time.Microsecond), float64(pn)/float64(dn), (pn - dn).Round(time.Microsecond))
}
