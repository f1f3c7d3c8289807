package sqlcap

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver, registered as "pgx"
	_ "modernc.org/sqlite"             // pure Go SQLite driver, registered as "sqlite"

	"github.com/toolshed/toolshed/sdk/abi"
)

// Database names a database the operator offers to plugins.
type Database struct {
	Name   string
	Driver string // "sqlite" (a file path as DSN) or "postgres" (a libpq/pgx DSN or URL)
	DSN    string
}

// Options bound every query. Zero values are defaults.
type Options struct {
	Timeout  time.Duration // per statement (default 5s)
	MaxRows  int           // rows returned at most (default 1,000)
	MaxBytes int           // bytes of row data returned at most (default 1 MiB)
}

// Service runs plugins' read-only queries. It implements wasm.SQLRunner.
type Service struct {
	opts    Options
	dbs     map[string]*sql.DB
	drivers map[string]string
}

// Open opens the databases read-only.
func Open(dbs []Database, opts Options) (*Service, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MaxRows <= 0 {
		opts.MaxRows = 1000
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 20
	}
	s := &Service{opts: opts, dbs: map[string]*sql.DB{}, drivers: map[string]string{}}
	for _, d := range dbs {
		if _, dup := s.dbs[d.Name]; dup {
			s.Close()
			return nil, fmt.Errorf("sqlcap: database %q configured twice", d.Name)
		}
		var db *sql.DB
		var err error
		switch d.Driver {
		case "sqlite":
			// mode=ro: the file cannot be written through this handle;
			// query_only refuses writes even to temporary tables.
			dsn := "file:" + url.PathEscape(d.DSN) + "?mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(2000)"
			db, err = sql.Open("sqlite", dsn)
		case "postgres":
			// Every statement runs in a read-only transaction with a
			// statement timeout (QuerySQL); a read-only role is wise too.
			db, err = sql.Open("pgx", d.DSN)
		default:
			err = fmt.Errorf("unsupported driver %q (want sqlite or postgres)", d.Driver)
		}
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = db.PingContext(ctx)
			cancel()
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlcap: database %q: %w", d.Name, err)
		}
		s.dbs[d.Name] = db
		s.drivers[d.Name] = d.Driver
	}
	return s, nil
}

// Close closes the databases.
func (s *Service) Close() error {
	var errs []error
	for _, db := range s.dbs {
		errs = append(errs, db.Close())
	}
	return errors.Join(errs...)
}

// Databases lists the configured names, sorted.
func (s *Service) Databases() []string {
	out := make([]string, 0, len(s.dbs))
	for n := range s.dbs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// QuerySQL runs one read-only statement. Refusals, SQL errors and
// timeouts are errors the plugin can pass to the model.
func (s *Service) QuerySQL(ctx context.Context, database string, req abi.SQLRequest) (*abi.SQLReply, error) {
	db, ok := s.dbs[database]
	if !ok {
		return nil, fmt.Errorf("sql: no database %q is configured", database)
	}
	if err := CheckReadOnly(req.SQL); err != nil {
		return nil, err
	}
	maxRows := s.opts.MaxRows
	if req.MaxRows > 0 && req.MaxRows < maxRows {
		maxRows = req.MaxRows
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sql: %w", err)
	}
	defer tx.Rollback()
	if s.drivers[database] == "postgres" {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", s.opts.Timeout.Milliseconds())); err != nil {
			return nil, fmt.Errorf("sql: %w", err)
		}
	}
	rows, err := tx.QueryContext(ctx, req.SQL, req.Params...)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded || strings.Contains(err.Error(), "statement timeout") {
			return nil, fmt.Errorf("sql: the statement ran longer than %s and was stopped", s.opts.Timeout)
		}
		return nil, fmt.Errorf("sql: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("sql: %w", err)
	}
	reply := &abi.SQLReply{Columns: cols, Rows: [][]any{}}
	size := 0
	for rows.Next() {
		if len(reply.Rows) == maxRows {
			reply.Truncated = true
			break
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("sql: %w", err)
		}
		for i, v := range vals {
			vals[i] = plain(v)
		}
		b, _ := json.Marshal(vals)
		if size+len(b) > s.opts.MaxBytes {
			reply.Truncated = true
			break
		}
		size += len(b)
		reply.Rows = append(reply.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() == context.DeadlineExceeded || strings.Contains(err.Error(), "statement timeout") {
			return nil, fmt.Errorf("sql: the statement ran longer than %s and was stopped", s.opts.Timeout)
		}
		return nil, fmt.Errorf("sql: %w", err)
	}
	return reply, nil
}

// plain turns driver values into JSON-friendly ones.
func plain(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case time.Time:
		return x.Format(time.RFC3339)
	}
	return v
}
