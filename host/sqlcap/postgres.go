package sqlcap

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/toolshed/toolshed/sdk/abi"
)

// postgresDB runs queries against one PostgreSQL database. It is safe for
// concurrent use.
type postgresDB struct {
	db   *sql.DB
	opts Options
}

// serverFunctions reach the server's files, programs, configuration or
// other backends. A role that may execute any of them is refused by Open
// (pg_terminate_backend and pg_cancel_backend are granted to PUBLIC by
// default and reach every backend of the same role: docs/SQL.md gives the
// REVOKE).
var serverFunctions = []string{
	"pg_terminate_backend", "pg_cancel_backend", "pg_read_file", "pg_read_binary_file", "pg_ls_dir",
	"pg_stat_file", "pg_ls_logdir", "pg_ls_waldir", "pg_ls_tmpdir", "pg_ls_archive_statusdir",
	"lo_import", "lo_export", "pg_reload_conf", "pg_rotate_logfile", "pg_promote", "pg_switch_wal",
	"pg_file_write", "pg_file_rename", "pg_file_unlink", "dblink_connect", "dblink_connect_u",
	"dblink", "dblink_exec", "dblink_send_query",
}

// privilegedRoles are predefined roles whose members reach past reading.
var privilegedRoles = []string{
	"pg_read_server_files", "pg_write_server_files", "pg_execute_server_program", "pg_signal_backend",
	"pg_write_all_data", "pg_checkpoint",
	// pg_read_all_stats (and pg_monitor, which holds it) shows every
	// backend's query text, other applications' included.
	"pg_read_all_stats", "pg_monitor",
}

func openPostgres(d Database, opts Options) (*postgresDB, error) {
	cfg, err := pgx.ParseConfig(d.DSN)
	if err != nil {
		return nil, err
	}
	// The extended protocol with an unnamed statement, described then
	// executed: the server parses exactly one statement ("cannot insert
	// multiple commands into a prepared statement"). The simple protocol,
	// which runs every statement of a string, is never used for a plugin's
	// SQL, whatever the DSN says.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	cfg.StatementCacheCapacity = 0
	cfg.DescriptionCacheCapacity = 0
	ms := strconv.FormatInt(opts.Timeout.Milliseconds(), 10)
	cfg.RuntimeParams["statement_timeout"] = ms
	cfg.RuntimeParams["lock_timeout"] = ms
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(2*opts.Timeout.Milliseconds(), 10)
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "toolshed-sqlcap"
	}
	// No message from the server may be larger than a value may be: a row
	// of repeat('x', 500000000) fails instead of filling the host's memory.
	maxBody := opts.MaxValueBytes + opts.MaxBytes + 64<<10
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		f := pgproto3.NewFrontend(r, w)
		f.SetMaxBodyLen(maxBody)
		return f
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(opts.MaxConcurrent)
	db.SetMaxIdleConns(opts.MaxConcurrent)
	db.SetConnMaxIdleTime(5 * time.Minute)
	p := &postgresDB{db: db, opts: opts}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	found, err := p.privileges(ctx)
	if err == nil && len(found) > 0 && !d.AllowPrivileged {
		err = fmt.Errorf("the role may do more than read, which plugins' queries must not: %s; "+
			"connect as a role that holds only SELECT (docs/SQL.md shows how to create one and the REVOKE statements), "+
			"or allow a privileged role for this database explicitly (AllowPrivileged)", strings.Join(found, "; "))
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return p, nil
}

func (p *postgresDB) close() error { return p.db.Close() }

// privileges lists what the connecting role may do beyond reading.
func (p *postgresDB) privileges(ctx context.Context) ([]string, error) {
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var found []string
	var role string
	var super, createRole, replication bool
	if err := tx.QueryRowContext(ctx, `SELECT rolname, rolsuper, rolcreaterole, rolreplication FROM pg_roles WHERE rolname = current_user`).
		Scan(&role, &super, &createRole, &replication); err != nil {
		return nil, err
	}
	if super { // everything else follows
		return []string{fmt.Sprintf("role %q is a superuser", role)}, nil
	}
	// PostgreSQL shows a role the text of its own backends' queries in
	// pg_stat_activity, and every plugin query of every API key runs as
	// this role: model-written SQL carries user data as literals. With
	// track_activities off (settable for a role by a superuser only) no
	// session's text is recorded, so none shows another's.
	var track string
	if err := tx.QueryRowContext(ctx, `SELECT current_setting('track_activities')`).Scan(&track); err != nil {
		return nil, fmt.Errorf("checking the role's settings: %w", err)
	}
	if track != "off" {
		found = append(found, fmt.Sprintf("its sessions show each other their queries' text in pg_stat_activity "+
			"(track_activities is on; as a superuser: ALTER ROLE %s SET track_activities = off)", pgx.Identifier{role}.Sanitize()))
	}
	if createRole {
		found = append(found, fmt.Sprintf("role %q has CREATEROLE", role))
	}
	if replication {
		found = append(found, fmt.Sprintf("role %q has REPLICATION", role))
	}
	checks := []struct {
		what, query string
		args        []any
	}{
		{"it is a member of", `SELECT rolname FROM pg_roles WHERE rolname = ANY($1) AND pg_has_role(current_user, oid, 'MEMBER') ORDER BY 1`,
			[]any{privilegedRoles}},
		{"it may execute", `SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname = ANY($1) AND has_function_privilege(p.oid, 'EXECUTE') ORDER BY 1`,
			[]any{serverFunctions}},
		{"it may write to or owns", `SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
			AND (pg_has_role(c.relowner, 'USAGE')
			  OR (c.relkind <> 'S' AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER'))
			  OR (c.relkind = 'S' AND has_sequence_privilege(c.oid, 'USAGE, UPDATE')))
			ORDER BY 1`, nil},
		{"it may create objects in schema", `SELECT format('%I', nspname) FROM pg_namespace
			WHERE nspname !~ '^pg_(temp|toast)' AND has_schema_privilege(oid, 'CREATE') ORDER BY 1`, nil},
		{"it may create schemas in database", `SELECT format('%I', current_database()) WHERE has_database_privilege(current_database(), 'CREATE')`, nil},
	}
	for _, c := range checks {
		rows, err := tx.QueryContext(ctx, c.query, c.args...)
		if err != nil {
			return nil, fmt.Errorf("checking the role's privileges: %w", err)
		}
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return nil, err
			}
			names = append(names, n)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("checking the role's privileges: %w", err)
		}
		if len(names) > 5 {
			names = append(names[:5], fmt.Sprintf("and %d more", len(names)-5))
		}
		if len(names) > 0 {
			found = append(found, c.what+" "+strings.Join(names, ", "))
		}
	}
	return found, nil
}

func (p *postgresDB) query(ctx context.Context, req abi.SQLRequest, maxRows int) (*abi.SQLReply, error) {
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sql: %w", err)
	}
	reply, err := p.run(ctx, conn, req, maxRows)
	// Whatever the statement did to the session (settings, prepared
	// statements, advisory locks, LISTEN, cursors) goes: DISCARD ALL, or
	// the connection is dropped.
	reset, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn().PgConn()
		if err := pc.Exec(reset, "DISCARD ALL").Close(); err != nil {
			return driver.ErrBadConn
		}
		return nil
	})
	conn.Close()
	return reply, err
}

func (p *postgresDB) run(ctx context.Context, conn *sql.Conn, req abi.SQLRequest, maxRows int) (*abi.SQLReply, error) {
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sql: %w", err)
	}
	defer tx.Rollback() // never committed: nothing a statement does stays
	rows, err := tx.QueryContext(ctx, req.SQL, req.Params...)
	if err != nil {
		return nil, pgExplain(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, pgExplain(err)
	}
	sink := rowSink{reply: &abi.SQLReply{Columns: cols, Rows: [][]any{}}, maxRows: maxRows, maxBytes: p.opts.MaxBytes}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, pgExplain(err)
		}
		for i, v := range vals {
			vals[i] = plain(v)
		}
		if !sink.add(vals) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, pgExplain(err)
	}
	return sink.reply, nil
}

// pgExplain turns a server error into one the model can act on.
func pgExplain(err error) error {
	var pe *pgconn.PgError
	var big *pgproto3.ExceededMaxBodyLenErr
	switch {
	case errors.As(err, &pe) && pe.Code == "25006": // read_only_sql_transaction
		return fmt.Errorf("%w: the database is read-only and only SELECT, WITH, VALUES or EXPLAIN queries may run (%s)", ErrRefused, pe.Message)
	case errors.As(err, &pe) && pe.Code == "42601" && strings.Contains(pe.Message, "multiple commands"):
		return fmt.Errorf("%w: one statement per call (%s)", ErrRefused, pe.Message)
	case errors.As(err, &pe) && pe.Code == "57014": // query_canceled: statement_timeout
		return context.DeadlineExceeded
	case errors.As(err, &big):
		return fmt.Errorf("sql: a row of the result is larger than %d bytes; select fewer or shorter values", big.MaxExpectedBodyLen)
	}
	return fmt.Errorf("sql: %w", err)
}
