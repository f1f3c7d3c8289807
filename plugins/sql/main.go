// Command sql is the bundled SQL plugin: list and describe tables, validate
// and run read-only queries, all through the host's "sql" capability (the
// plugin never holds a connection). It speaks SQLite's and PostgreSQL's
// catalogues, finding out which on first use.
package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolshed/toolshed/sdk"
	"github.com/toolshed/toolshed/sdk/abi"
)

type schemaArgs struct {
	Schema string `json:"schema"`
}

type tablesArgs struct {
	Tables []string `json:"tables"`
}

type sqlArgs struct {
	SQL     string `json:"sql"`
	Params  []any  `json:"params"`
	MaxRows int    `json:"max_rows"`
}

type table struct {
	Name    string `json:"name"`
	Rows    int64  `json:"rows"`
	Comment string `json:"comment,omitempty"`
}

func init() {
	sdk.Handle("listTables", listTables)
	sdk.Handle("describeTables", describeTables)
	sdk.Handle("validateSql", validateSQL)
	sdk.Handle("executeSql", executeSQL)
}

// postgres reports whether the database is PostgreSQL (else SQLite); the
// answer lives as long as the instance, that is one request.
var dialect string

func postgres() bool {
	if dialect == "" {
		dialect = "sqlite"
		if _, err := sdk.Query(`SELECT sqlite_version()`); err != nil {
			if _, err := sdk.Query(`SELECT current_schema()`); err == nil {
				dialect = "postgres"
			}
		}
	}
	return dialect == "postgres"
}

func tables() ([]table, error) {
	q := `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
	if postgres() {
		q = `SELECT c.relname, COALESCE(obj_description(c.oid, 'pg_class'), '') FROM pg_class c
		     JOIN pg_namespace n ON n.oid = c.relnamespace
		     WHERE c.relkind IN ('r', 'p', 'v') AND n.nspname = current_schema() ORDER BY 1`
	}
	r, err := sdk.Query(q)
	if err != nil {
		return nil, err
	}
	var out []table
	for _, row := range r.Rows {
		t := table{Name: fmt.Sprint(row[0]), Comment: firstComment(fmt.Sprint(row[1]))}
		if postgres() {
			t.Comment = fmt.Sprint(row[1])
		}
		c, err := sdk.Query(`SELECT COUNT(*) FROM "` + strings.ReplaceAll(t.Name, `"`, `""`) + `"`)
		if err == nil && len(c.Rows) == 1 {
			t.Rows = toInt(c.Rows[0][0])
		}
		out = append(out, t)
	}
	return out, nil
}

// firstComment is the "-- comment" on the first line of a CREATE TABLE.
func firstComment(ddl string) string {
	line, _, _ := strings.Cut(ddl, "\n")
	if _, c, ok := strings.Cut(line, "--"); ok {
		return strings.TrimSpace(c)
	}
	return ""
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case json.Number:
		n, _ := x.Int64()
		return n
	}
	return 0
}

func listTables(schemaArgs) (sdk.Result, error) {
	ts, err := tables()
	if err != nil {
		return sdk.Result{}, err
	}
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%s (%s)", t.Name, rows(int(t.Rows)))
		if t.Comment != "" {
			fmt.Fprintf(&b, ": %s", t.Comment)
		}
		b.WriteString("\n")
	}
	return sdk.Result{Content: strings.TrimRight(b.String(), "\n"), Structured: ts}, nil
}

type column struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	NotNull  bool     `json:"not_null,omitempty"`
	Key      string   `json:"key,omitempty"`
	Comment  string   `json:"comment,omitempty"`
	Examples []string `json:"examples,omitempty"`
}

type described struct {
	Table   string   `json:"table"`
	Comment string   `json:"comment,omitempty"`
	Columns []column `json:"columns"`
}

func describeTables(a tablesArgs) (sdk.Result, error) {
	all, err := tables()
	if err != nil {
		return sdk.Result{}, err
	}
	known := map[string]table{}
	var names []string
	for _, t := range all {
		known[strings.ToLower(t.Name)] = t
		names = append(names, t.Name)
	}
	var out []described
	var b strings.Builder
	for _, want := range a.Tables {
		t, ok := known[strings.ToLower(strings.TrimSpace(want))]
		if !ok {
			return sdk.Errorf("table %q not found%s; the tables are: %s", want, suggest(want, names), strings.Join(names, ", ")), nil
		}
		d := described{Table: t.Name, Comment: t.Comment}
		var cols, fks, ddl *abi.SQLReply
		var err error
		comments := map[string]string{}
		if postgres() {
			cols, err = sdk.Query(`SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull::int,
				CASE WHEN EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY(i.indkey)) THEN 1 ELSE 0 END,
				COALESCE(col_description(a.attrelid, a.attnum), '')
				FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, t.Name)
			if err != nil {
				return sdk.Result{}, err
			}
			// pg_constraint, not information_schema: the latter shows
			// constraints only to a table's owner, and the host's role
			// holds nothing but SELECT.
			fks, _ = sdk.Query(`SELECT a.attname, r.relname, ra.attname
				FROM pg_constraint c
				JOIN LATERAL unnest(c.conkey, c.confkey) AS k(col, refcol) ON true
				JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.col
				JOIN pg_class r ON r.oid = c.confrelid
				JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.refcol
				WHERE c.contype = 'f' AND c.conrelid = to_regclass($1)`, t.Name)
			for _, row := range cols.Rows {
				comments[fmt.Sprint(row[0])] = fmt.Sprint(row[4])
			}
		} else {
			cols, err = sdk.Query(`SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, t.Name)
			if err != nil {
				return sdk.Result{}, err
			}
			fks, _ = sdk.Query(`SELECT "from", "table", "to" FROM pragma_foreign_key_list(?)`, t.Name)
			ddl, _ = sdk.Query(`SELECT sql FROM sqlite_master WHERE name = ?`, t.Name)
		}
		if ddl != nil && len(ddl.Rows) == 1 {
			for _, line := range strings.Split(fmt.Sprint(ddl.Rows[0][0]), "\n")[1:] {
				def, c, ok := strings.Cut(line, "--")
				if f := strings.Fields(def); ok && len(f) > 0 {
					comments[f[0]] = strings.TrimSpace(c)
				}
			}
		}
		for _, row := range cols.Rows {
			c := column{Name: fmt.Sprint(row[0]), Type: fmt.Sprint(row[1]), NotNull: toInt(row[2]) == 1, Comment: comments[fmt.Sprint(row[0])]}
			if toInt(row[3]) > 0 {
				c.Key = "primary key"
			}
			if fks != nil {
				for _, fk := range fks.Rows {
					if fmt.Sprint(fk[0]) == c.Name {
						c.Key = fmt.Sprintf("references %s(%s)", fk[1], fk[2])
					}
				}
			}
			q := fmt.Sprintf(`SELECT DISTINCT "%s" FROM "%s" WHERE "%s" IS NOT NULL LIMIT 3`, c.Name, t.Name, c.Name)
			if ex, err := sdk.Query(q); err == nil {
				for _, r := range ex.Rows {
					c.Examples = append(c.Examples, fmt.Sprint(r[0]))
				}
			}
			d.Columns = append(d.Columns, c)
		}
		out = append(out, d)
		fmt.Fprintf(&b, "%s (%s)", t.Name, rows(int(t.Rows)))
		if t.Comment != "" {
			fmt.Fprintf(&b, ": %s", t.Comment)
		}
		b.WriteString("\n")
		for _, c := range d.Columns {
			fmt.Fprintf(&b, "  %s %s", c.Name, c.Type)
			if c.Key != "" {
				fmt.Fprintf(&b, " [%s]", c.Key)
			}
			if c.Comment != "" {
				fmt.Fprintf(&b, " -- %s", c.Comment)
			}
			if len(c.Examples) > 0 {
				fmt.Fprintf(&b, " e.g. %s", strings.Join(c.Examples, ", "))
			}
			b.WriteString("\n")
		}
	}
	return sdk.Result{Content: strings.TrimRight(b.String(), "\n"), Structured: out}, nil
}

func validateSQL(a sqlArgs) (sdk.Result, error) {
	if strings.TrimSpace(a.SQL) == "" {
		return sdk.Errorf("give the SQL to check in \"sql\""), nil
	}
	explain := "EXPLAIN QUERY PLAN "
	if postgres() {
		explain = "EXPLAIN "
	}
	plan, err := sdk.Query(explain+a.SQL, a.Params...)
	if err != nil {
		return sdk.Errorf("invalid: %s%s", err, hint(err.Error())), nil
	}
	var steps []string
	for _, r := range plan.Rows {
		steps = append(steps, fmt.Sprint(r[len(r)-1]))
	}
	return sdk.Result{Content: "valid. Plan: " + strings.Join(steps, "; "), Structured: map[string]any{"valid": true, "plan": steps}}, nil
}

// missing finds the unknown name in SQLite's or PostgreSQL's error, and
// whether it is a column.
func missing(msg string) (name string, column, ok bool) {
	for _, kind := range []string{"no such table: ", "no such column: "} {
		if i := strings.Index(msg, kind); i >= 0 {
			if f := strings.Fields(msg[i+len(kind):]); len(f) > 0 {
				return strings.Trim(f[0], `"'`), kind == "no such column: ", true
			}
		}
	}
	for _, kind := range []string{"relation ", "column "} {
		if i := strings.Index(msg, kind+`"`); i >= 0 {
			rest := msg[i+len(kind)+1:]
			if j := strings.Index(rest, `" does not exist`); j > 0 {
				return rest[:j], kind == "column ", true
			}
		}
	}
	return "", false, false
}

// hint suggests close table or column names for an unknown one.
func hint(msg string) string {
	if name, column, ok := missing(msg); ok {
		kind := "no such table: "
		if column {
			kind = "no such column: "
		}
		if j := strings.LastIndex(name, "."); j >= 0 {
			name = name[j+1:]
		}
		var cands []string
		ts, _ := tables()
		for _, t := range ts {
			cands = append(cands, t.Name)
			if kind == "no such column: " {
				q := `SELECT name FROM pragma_table_info(?)`
				if postgres() {
					q = `SELECT column_name FROM information_schema.columns WHERE table_name = $1`
				}
				if cols, err := sdk.Query(q, t.Name); err == nil {
					for _, c := range cols.Rows {
						cands = append(cands, fmt.Sprint(c[0]))
					}
				}
			}
		}
		return suggest(name, cands)
	}
	return ""
}

// suggest names the closest candidates by edit distance, or nothing.
func suggest(name string, cands []string) string {
	type scored struct {
		s string
		d int
	}
	var close []scored
	seen := map[string]bool{}
	for _, c := range cands {
		if seen[c] {
			continue
		}
		seen[c] = true
		if d := distance(strings.ToLower(name), strings.ToLower(c)); d <= max(2, len(name)/3) {
			close = append(close, scored{c, d})
		}
	}
	if len(close) == 0 {
		return ""
	}
	sort.Slice(close, func(i, j int) bool {
		if close[i].d != close[j].d {
			return close[i].d < close[j].d
		}
		return close[i].s < close[j].s
	})
	var names []string
	for i, c := range close {
		if i == 3 {
			break
		}
		names = append(names, "`"+c.s+"`")
	}
	return "; did you mean " + strings.Join(names, " or ") + "?"
}

func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

func executeSQL(a sqlArgs) (sdk.Result, error) {
	if strings.TrimSpace(a.SQL) == "" {
		return sdk.Errorf("give the SQL to run in \"sql\""), nil
	}
	maxRows := a.MaxRows
	if maxRows <= 0 {
		maxRows = 200
	}
	res, err := sdk.QueryWith(abi.SQLRequest{SQL: a.SQL, Params: a.Params, MaxRows: maxRows})
	if err != nil {
		return sdk.Errorf("%s%s", err, hint(err.Error())), nil
	}
	return sdk.Result{Content: render(res), Structured: res}, nil
}

// render draws rows as a compact text table.
func render(r *abi.SQLReply) string {
	var b strings.Builder
	b.WriteString(strings.Join(r.Columns, " | "))
	b.WriteString("\n")
	for _, row := range r.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = fmt.Sprint(v)
		}
		b.WriteString(strings.Join(cells, " | "))
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "(%s", rows(len(r.Rows)))
	if r.Truncated {
		b.WriteString(", truncated")
	}
	b.WriteString(")")
	return b.String()
}

func main() {}

// rows writes a row count, "1 row" or "N rows".
func rows(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}
