package sqlcap

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ncruces/go-sqlite3"

	"github.com/toolshed/toolshed/sdk/abi"
)

// sqliteDB runs queries against one SQLite file. Each query opens its own
// connection and closes it (see RATIONALE.md): nothing a statement does to
// a connection can be seen by the next one, and the engine's memory goes
// back to the system after every query. It is safe for concurrent use.
type sqliteDB struct {
	uri  string // file:PATH?mode=ro, the path escaped
	opts Options
}

func openSQLite(path string, opts Options) (*sqliteDB, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// mode=ro: SQLite opens the file read-only (as SQLITE_OPEN_READONLY
	// would); it cannot be created or written through this connection.
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro"}
	db := &sqliteDB{uri: u.String(), opts: opts}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	if _, err := db.query(ctx, abi.SQLRequest{SQL: "SELECT count(*) FROM sqlite_master"}, 1); err != nil {
		return nil, err
	}
	return db, nil
}

func (db *sqliteDB) close() error { return nil }

// The limits every connection gets (sqlite3_limit). Attached databases 0
// makes ATTACH and VACUUM INTO impossible whatever the authorizer says.
func (db *sqliteDB) limits() map[sqlite3.LimitCategory]int {
	return map[sqlite3.LimitCategory]int{
		sqlite3.LIMIT_LENGTH:              db.opts.MaxValueBytes,
		sqlite3.LIMIT_SQL_LENGTH:          db.opts.MaxSQLBytes,
		sqlite3.LIMIT_ATTACHED:            0,
		sqlite3.LIMIT_EXPR_DEPTH:          200,
		sqlite3.LIMIT_PARSER_DEPTH:        200,
		sqlite3.LIMIT_COMPOUND_SELECT:     100,
		sqlite3.LIMIT_VDBE_OP:             250_000,
		sqlite3.LIMIT_FUNCTION_ARG:        100,
		sqlite3.LIMIT_LIKE_PATTERN_LENGTH: 10_000,
		sqlite3.LIMIT_VARIABLE_NUMBER:     1000,
		sqlite3.LIMIT_TRIGGER_DEPTH:       0,
		sqlite3.LIMIT_WORKER_THREADS:      0,
	}
}

// conn opens a connection for one query: read-only, the engine's linear memory capped, temporary storage in that
// memory (no temporary files), then the limits and the authorizer.
func (db *sqliteDB) conn(ctx context.Context, auth *authorizer) (*sqlite3.Conn, error) {
	c, err := sqlite3.OpenContext(sqlite3.WithMaxMemory(ctx, db.opts.MaxMemory), db.uri)
	if err != nil {
		return nil, err
	}
	// Set up before the authorizer: after it no PRAGMA can run.
	setup := "PRAGMA query_only=1; PRAGMA trusted_schema=0; PRAGMA temp_store=MEMORY; PRAGMA busy_timeout=1000"
	if err := c.Exec(setup); err != nil {
		c.Close()
		return nil, err
	}
	c.HardHeapLimit(db.opts.MaxMemory * 3 / 4)
	for id, v := range db.limits() {
		c.Limit(id, v)
	}
	if err := c.SetAuthorizer(auth.check); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (db *sqliteDB) query(ctx context.Context, req abi.SQLRequest, maxRows int) (reply *abi.SQLReply, err error) {
	// The engine panics when it runs out of its (capped) memory: that is
	// this query's failure, not the host's. The deferred closes below run
	// first, so the connection and its memory are released.
	defer func() {
		if r := recover(); r != nil {
			reply = nil
			if fmt.Sprint(r) == "sqlite3: out of memory" {
				err = errors.New("sql: the query needs more memory than it may use; make it smaller (fewer rows, no huge strings or sorts)")
			} else {
				err = fmt.Errorf("sql: the database engine failed: %v", r)
			}
		}
	}()
	auth := &authorizer{maxValue: db.opts.MaxValueBytes}
	c, err := db.conn(ctx, auth)
	if err != nil {
		return nil, fmt.Errorf("sql: %w", err)
	}
	defer c.Close()
	c.SetInterrupt(ctx)
	stmt, tail, err := c.Prepare(req.SQL)
	if err != nil {
		return nil, auth.explain(err)
	}
	if stmt == nil {
		return nil, fmt.Errorf("%w: empty statement", ErrRefused)
	}
	defer func() { stmt.Close() }()
	if rest := strings.TrimSpace(tail); rest != "" {
		// SQLite's own parser decides where the first statement ends.
		// Anything after it other than comments is a second statement.
		next, _, err := c.Prepare(tail)
		if next != nil {
			next.Close()
		}
		if next != nil || err != nil {
			return nil, fmt.Errorf("%w: one statement per call; a second statement follows the first: %q", ErrRefused, clip(rest, 60))
		}
	}
	if !stmt.ReadOnly() {
		return nil, fmt.Errorf("%w: the database is read-only and only SELECT, WITH, VALUES or EXPLAIN queries may run; this statement would change a database or a file", ErrRefused)
	}
	if n := stmt.BindCount(); n != len(req.Params) {
		return nil, fmt.Errorf("sql: the statement has %d parameters and %d were given", n, len(req.Params))
	}
	for i, p := range req.Params {
		if err := bind(stmt, i+1, p); err != nil {
			return nil, fmt.Errorf("sql: parameter %d: %w", i+1, err)
		}
	}
	auth.stepping = true
	cols := make([]string, stmt.ColumnCount())
	for i := range cols {
		cols[i] = stmt.ColumnName(i)
	}
	sink := rowSink{reply: &abi.SQLReply{Columns: cols, Rows: [][]any{}}, maxRows: maxRows, maxBytes: db.opts.MaxBytes}
	for stmt.Step() {
		vals := make([]any, len(cols))
		for i := range vals {
			switch stmt.ColumnType(i) {
			case sqlite3.INTEGER:
				vals[i] = stmt.ColumnInt64(i)
			case sqlite3.FLOAT:
				vals[i] = stmt.ColumnFloat(i)
			case sqlite3.TEXT, sqlite3.BLOB:
				vals[i] = stmt.ColumnText(i)
			}
		}
		if !sink.add(vals) {
			break
		}
	}
	if err := stmt.Err(); err != nil {
		return nil, auth.explain(err)
	}
	return sink.reply, nil
}

func bind(stmt *sqlite3.Stmt, i int, p any) error {
	switch v := p.(type) {
	case nil:
		return stmt.BindNull(i)
	case bool:
		return stmt.BindBool(i, v)
	case int:
		return stmt.BindInt64(i, int64(v))
	case int64:
		return stmt.BindInt64(i, v)
	case float64:
		// JSON has one number type: whole numbers bind as integers.
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return stmt.BindInt64(i, int64(v))
		}
		return stmt.BindFloat(i, v)
	case string:
		return stmt.BindText(i, v)
	}
	return fmt.Errorf("unsupported type %T", p)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// authorizer is the connection's sqlite3_set_authorizer callback: deny by
// default. It remembers the first refusal so the error can say what was
// refused.
type authorizer struct {
	stepping bool   // the statement is running: pragma tables run their PRAGMA now
	refused  string // what was denied first, for the error
	maxValue int    // LIMIT_LENGTH, for the error
}

func (a *authorizer) check(action sqlite3.AuthorizerActionCode, name3, name4, schema, inner string) sqlite3.AuthorizerReturnCode {
	why := ""
	switch action {
	case sqlite3.AUTH_SELECT, sqlite3.AUTH_RECURSIVE:
		return sqlite3.AUTH_OK
	case sqlite3.AUTH_READ:
		if strings.HasPrefix(strings.ToLower(name3), "pragma_") && !pragmaTables[strings.ToLower(name3)] {
			why = fmt.Sprintf("the table-valued pragma %s is not available (allowed: %s)", name3, strings.Join(pragmaTableList, ", "))
			break
		}
		if schema == "temp" {
			why = "temporary tables are not available"
			break
		}
		return sqlite3.AUTH_OK
	case sqlite3.AUTH_FUNCTION:
		if functions[strings.ToLower(name4)] {
			return sqlite3.AUTH_OK
		}
		why = fmt.Sprintf("function %s is not available", name4)
	case sqlite3.AUTH_PRAGMA:
		// A pragma table (pragma_table_info(...)) runs its PRAGMA while
		// the statement steps; a PRAGMA statement is never allowed.
		if a.stepping && pragmaTables["pragma_"+strings.ToLower(name3)] {
			return sqlite3.AUTH_OK
		}
		why = fmt.Sprintf("PRAGMA %s is not allowed (read the schema with SELECT … FROM pragma_table_info('table') or sqlite_master)", name3)
	case sqlite3.AUTH_INSERT, sqlite3.AUTH_UPDATE, sqlite3.AUTH_DELETE:
		why = fmt.Sprintf("writing to %s is not allowed", name3)
		if schema == "temp" {
			why = "creating temporary objects is not allowed (use WITH … AS (…) instead of a temporary view)"
		}
	case sqlite3.AUTH_ATTACH, sqlite3.AUTH_DETACH:
		why = "ATTACH, DETACH and VACUUM INTO are not allowed"
	case sqlite3.AUTH_TRANSACTION, sqlite3.AUTH_SAVEPOINT:
		why = "transaction control is not allowed (every query runs on its own)"
	case sqlite3.AUTH_CREATE_TEMP_INDEX, sqlite3.AUTH_CREATE_TEMP_TABLE, sqlite3.AUTH_CREATE_TEMP_TRIGGER, sqlite3.AUTH_CREATE_TEMP_VIEW:
		why = "creating temporary objects is not allowed (use WITH … AS (…) instead of a temporary view)"
	default:
		why = "changing the schema or the database is not allowed"
	}
	if a.refused == "" {
		a.refused = why
	}
	return sqlite3.AUTH_DENY
}

// explain turns an engine error into one the model can act on.
func (a *authorizer) explain(err error) error {
	if a.refused != "" { // the authorizer's refusal is why the statement failed
		return fmt.Errorf("%w: %s; the database is read-only and only SELECT, WITH, VALUES or EXPLAIN queries may run", ErrRefused, a.refused)
	}
	switch {
	case errors.Is(err, sqlite3.TOOBIG):
		return fmt.Errorf("sql: a string or blob would be larger than %d bytes, the limit; make the values smaller", a.maxValue)
	case errors.Is(err, sqlite3.NOMEM):
		return errors.New("sql: the query needs more memory than it may use; make it smaller (fewer rows, no huge strings or sorts)")
	case errors.Is(err, sqlite3.INTERRUPT):
		return context.DeadlineExceeded
	}
	return fmt.Errorf("sql: %w", err)
}

// pragmaTables are the table-valued pragmas a query may read: they
// describe the schema and have no effect. Every other pragma_* table is
// refused (pragmas that set something, check the whole file or name the
// file on disk).
var pragmaTableList = []string{
	"pragma_collation_list", "pragma_foreign_key_list", "pragma_function_list", "pragma_index_info",
	"pragma_index_list", "pragma_index_xinfo", "pragma_module_list", "pragma_pragma_list",
	"pragma_table_info", "pragma_table_list", "pragma_table_xinfo",
}

var pragmaTables = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range pragmaTableList {
		m[p] = true
	}
	return m
}()

// functions are the SQL functions a query may call: SQLite's core,
// aggregate, window, date, math and JSON functions. Anything else —
// load_extension, fts3_tokenizer, sqlite_log, a function an extension
// might add later — is refused by the authorizer.
var functions = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(`
abs changes char coalesce concat concat_ws format glob hex if ifnull iif instr last_insert_rowid length
like likelihood likely lower ltrim max min nullif octet_length printf quote random randomblob replace
round rtrim sign soundex sqlite_compileoption_get sqlite_compileoption_used sqlite_source_id
sqlite_version substr substring total_changes trim typeof unhex unicode unistr unistr_quote unlikely
upper zeroblob
avg count group_concat string_agg sum total
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
date time datetime julianday unixepoch strftime timediff current_date current_time current_timestamp
acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log log10 log2 mod
pi pow power radians sin sinh sqrt tan tanh trunc
json jsonb json_array jsonb_array json_array_length json_error_position json_extract jsonb_extract
json_insert jsonb_insert json_object jsonb_object json_patch jsonb_patch json_pretty json_remove
jsonb_remove json_replace jsonb_replace json_set jsonb_set json_type json_valid json_quote
json_group_array jsonb_group_array json_group_object jsonb_group_object json_each json_tree
json_array_insert jsonb_array_insert -> ->>
regexp regexpi decimal decimal_add decimal_sub decimal_mul decimal_cmp decimal_sum base64`) {
		m[f] = true
	}
	return m
}()
