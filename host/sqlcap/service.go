// Package sqlcap is the host side of the "sql" capability: plugins send
// one SQL statement and its parameters through a host function; the host
// runs it read-only against an operator-named database and returns rows.
// The plugin never holds a connection or credentials.
//
// Read-only is a property of the database engine, not of a text filter:
// there is no statement gate of our own. For SQLite (sqlite.go) every
// query gets a fresh connection, opened read-only, whose authorizer allows
// reading tables, a fixed list of functions and a fixed list of
// schema-describing pragma tables and nothing else (no write, DDL,
// ATTACH, PRAGMA statement, temporary object or transaction control),
// whose limits forbid attached databases and cap every string, blob and
// statement, and whose statement must be flagged read-only by SQLite
// itself; the engine runs inside a memory-capped WebAssembly sandbox and
// is interrupted at the deadline. For PostgreSQL (postgres.go) every query
// runs through the extended protocol (one statement, never the simple
// protocol) in a READ ONLY transaction that is rolled back, under
// statement, lock and idle timeouts, on a connection that is reset
// afterwards; Open refuses a role that could write or reach the server's
// files, programs or other backends unless the operator allows it.
//
// Every query has a deadline, a row cap and a byte cap, and at most
// MaxConcurrent queries run at once per database.
//
// A Service is safe for concurrent use.
package sqlcap

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/toolshed/toolshed/sdk/abi"
)

// ErrRefused is wrapped by every refusal: a statement that is not one
// read-only query, or that reaches past the data it may read.
var ErrRefused = errors.New("sql: statement refused")

// Database names a database the operator offers to plugins.
type Database struct {
	Name   string
	Driver string // "sqlite" (a file path as DSN) or "postgres" (a libpq/pgx DSN or URL)
	DSN    string

	// AllowPrivileged lets Open accept a PostgreSQL role that is a
	// superuser or could write, read server files, run server programs
	// or signal other backends. Off by default: such a role is refused
	// with an error naming what was found. The read-only transaction
	// still applies; the role's other powers do not go away.
	AllowPrivileged bool
}

// Options bound every query. Zero values are defaults.
type Options struct {
	Timeout       time.Duration // per statement, waiting for a slot included (default 5s)
	MaxRows       int           // rows returned at most (default 1,000)
	MaxBytes      int           // bytes of row data returned at most (default 1 MiB)
	MaxValueBytes int           // one string, blob, parameter or PostgreSQL row at most (default 4 MiB)
	MaxSQLBytes   int           // statement text at most (default 100,000 bytes)
	MaxMemory     int64         // SQLite: the engine's memory per query (default 64 MiB)
	MaxConcurrent int           // queries running at once per database (default 4)
	// TenantSlots bounds the queries one tenant (QueryTenantSQL) runs at
	// once per database, so that one cannot hold every slot while another
	// waits: default half of MaxConcurrent, rounded up; at most
	// MaxConcurrent.
	TenantSlots int
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 1000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 20
	}
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = 4 << 20
	}
	if o.MaxSQLBytes <= 0 {
		o.MaxSQLBytes = 100_000
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = 64 << 20
	}
	if o.MaxMemory < 8<<20 {
		o.MaxMemory = 8 << 20 // SQLite needs a few MiB to open a database
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 4
	}
	if o.TenantSlots <= 0 {
		o.TenantSlots = (o.MaxConcurrent + 1) / 2
	}
	o.TenantSlots = min(o.TenantSlots, o.MaxConcurrent)
	return o
}

// backend runs one query against one database; it is safe for
// concurrent use.
type backend interface {
	query(ctx context.Context, req abi.SQLRequest, maxRows int) (*abi.SQLReply, error)
	close() error
}

// Service runs plugins' read-only queries. It implements wasm.SQLRunner.
// A Service is safe for concurrent use; Close must not race with queries.
type Service struct {
	opts    Options
	dbs     map[string]backend
	slots   map[string]chan struct{} // one token per query allowed to run
	tenants map[string]*tenantSlots  // each tenant's share of slots
}

// Open opens the databases. SQLite files must exist; PostgreSQL roles
// are checked (see Database.AllowPrivileged).
func Open(dbs []Database, opts Options) (*Service, error) {
	opts = opts.withDefaults()
	s := &Service{opts: opts, dbs: map[string]backend{}, slots: map[string]chan struct{}{}, tenants: map[string]*tenantSlots{}}
	for _, d := range dbs {
		if _, dup := s.dbs[d.Name]; dup {
			s.Close()
			return nil, fmt.Errorf("sqlcap: database %q configured twice", d.Name)
		}
		var b backend
		var err error
		switch d.Driver {
		case "sqlite":
			b, err = openSQLite(d.DSN, opts)
		case "postgres":
			b, err = openPostgres(d, opts)
		default:
			err = fmt.Errorf("unsupported driver %q (want sqlite or postgres)", d.Driver)
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlcap: database %q: %w", d.Name, err)
		}
		s.dbs[d.Name] = b
		s.slots[d.Name] = make(chan struct{}, opts.MaxConcurrent)
		s.tenants[d.Name] = newTenantSlots(opts.TenantSlots)
	}
	return s, nil
}

// Close closes the databases.
func (s *Service) Close() error {
	var errs []error
	for _, name := range s.Databases() {
		errs = append(errs, s.dbs[name].close())
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

// QuerySQL runs one read-only statement for no tenant. Refusals, SQL
// errors and timeouts are errors the plugin can pass to the model.
func (s *Service) QuerySQL(ctx context.Context, database string, req abi.SQLRequest) (*abi.SQLReply, error) {
	return s.QueryTenantSQL(ctx, "", database, req)
}

// QueryTenantSQL is QuerySQL for tenant (an opaque id; toolshed serve's
// is a hash of the API key): the query waits for one of the tenant's
// slots of the database (Options.TenantSlots) before one of the
// database's, so that another tenant's query finds a slot free. It
// implements wasm.TenantSQLRunner.
func (s *Service) QueryTenantSQL(ctx context.Context, tenant, database string, req abi.SQLRequest) (*abi.SQLReply, error) {
	b, ok := s.dbs[database]
	if !ok {
		return nil, fmt.Errorf("sql: no database %q is configured", database)
	}
	if len(req.SQL) > s.opts.MaxSQLBytes {
		return nil, fmt.Errorf("%w: the statement is %d bytes long; at most %d are accepted", ErrRefused, len(req.SQL), s.opts.MaxSQLBytes)
	}
	for i, p := range req.Params {
		switch v := p.(type) {
		case nil, bool, float64, int64, int:
		case string:
			if len(v) > s.opts.MaxValueBytes {
				return nil, fmt.Errorf("%w: parameter %d is %d bytes long; at most %d are accepted", ErrRefused, i+1, len(v), s.opts.MaxValueBytes)
			}
		default:
			return nil, fmt.Errorf("%w: parameter %d is a %T; parameters are strings, numbers, booleans or null", ErrRefused, i+1, p)
		}
	}
	maxRows := s.opts.MaxRows
	if req.MaxRows > 0 && req.MaxRows < maxRows {
		maxRows = req.MaxRows
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	ts := s.tenants[database]
	if err := ts.acquire(ctx, tenant); err != nil {
		return nil, fmt.Errorf("sql: this API key already runs %d queries on database %q, its share of the %d slots; try again later",
			ts.per, database, s.opts.MaxConcurrent)
	}
	defer ts.release(tenant)
	select {
	case s.slots[database] <- struct{}{}:
		defer func() { <-s.slots[database] }()
	case <-ctx.Done():
		return nil, fmt.Errorf("sql: database %q is busy (%d queries running); try again later", database, s.opts.MaxConcurrent)
	}
	reply, err := b.query(ctx, req, maxRows)
	if err != nil && !errors.Is(err, ErrRefused) && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded) {
		return nil, fmt.Errorf("sql: the statement ran longer than %s and was stopped", s.opts.Timeout)
	}
	return reply, err
}

// rowSink gathers rows under the row and byte caps.
type rowSink struct {
	reply    *abi.SQLReply
	maxRows  int
	maxBytes int
	size     int
}

// add appends a row unless a cap is hit; false means stop reading.
func (r *rowSink) add(vals []any) bool {
	if len(r.reply.Rows) == r.maxRows {
		r.reply.Truncated = true
		return false
	}
	n := 2
	for _, v := range vals {
		n += valueSize(v) + 1
	}
	if r.size+n > r.maxBytes {
		r.reply.Truncated = true
		return false
	}
	r.size += n
	r.reply.Rows = append(r.reply.Rows, vals)
	return true
}

// valueSize approximates a value's JSON size (strings may grow by escaping,
// which the byte cap need not count exactly).
func valueSize(v any) int {
	switch x := v.(type) {
	case nil:
		return 4
	case string:
		return len(x) + 2
	case bool:
		return 5
	default:
		return len(fmt.Sprint(x))
	}
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
