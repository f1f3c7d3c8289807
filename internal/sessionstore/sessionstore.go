// Package sessionstore keeps what an MCP session is, and the counts of the
// sessions alive, where every replica of toolshed serve finds them: in Redis
// or Valkey (server.sessions.store). With it, any replica serves any request
// of any session; the limits on sessions hold for the fleet, not for each
// process.
//
// A session is a Record under its id, with a time to live equal to the
// idle timeout, renewed by every request on any replica (Touch). The
// sessions alive are two sorted sets, all of them and each tenant's,
// scored by the time each expires: Admit drops the expired before it
// counts, so the slots of a replica that crashed free themselves after
// the idle timeout; Admit, Touch and Release are each one script, atomic
// on the server.
//
// The store holds a tenant's key hash, never the key, and a session id's
// hash, never the id (a bearer credential); the instances of a
// session are never stored (each replica makes its own). It also keeps
// copies of artifacts (PutBlob, GetBlob: host/artifact's Shared), so that
// an artifact link made by one replica is served by any.
package sessionstore

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/internal/redisurl"
)

// Record is what a session is, as any replica rebuilds it.
type Record struct {
	// Tenant is whom the session belongs to: the hash of the API key of
	// its initialize ("" with no keys).
	Tenant string `json:"tenant"`
	// Protocol is the protocol version negotiated at initialize.
	Protocol string `json:"protocol"`
	// Initialize are the client's initialize parameters (its
	// capabilities and clientInfo), as it sent them.
	Initialize json.RawMessage `json:"initialize"`
	// Discovered are the tools tool_search added to the session, in
	// discovery order (its tools/list: the always-on tools, then these).
	Discovered []string `json:"discovered"`
	// LogLevel is the level of the client's last logging/setLevel (""
	// before one): a replica that adopts the session sets it again.
	LogLevel string `json:"log_level,omitempty"`
	// Ended: the session was ended for the fleet (Release); the record
	// stays until its TTL so that a replica still holding the session in
	// memory ends it too instead of saving it again.
	Ended bool `json:"ended,omitempty"`
}

// Limits are the bounds Admit enforces across the fleet.
type Limits struct {
	// Max bounds the sessions alive at once (server.mcp.max_sessions).
	Max int
	// PerTenant bounds one tenant's; 0: no share.
	PerTenant int
	// TTL is how long a session lives with no request (the idle
	// timeout).
	TTL time.Duration
}

// Admission is Admit's verdict.
type Admission int

const (
	// Admitted: the session holds a slot until Release or its TTL.
	Admitted Admission = iota
	// Full: Limits.Max sessions are alive.
	Full
	// AtShare: the tenant holds Limits.PerTenant sessions.
	AtShare
)

// Store is where sessions live across replicas. Implementations are safe
// for concurrent use; a method's error means the store could not be
// reached or answered wrongly (the caller falls back on its own memory).
type Store interface {
	// Admit takes a slot for session sid of tenant if the fleet has
	// room.
	Admit(ctx context.Context, sid, tenant string, lim Limits) (Admission, error)
	// Save writes the session's record and its slots (a store that lost
	// them gets them again), TTLs renewed; a session ended (Release) is
	// left ended.
	Save(ctx context.Context, sid string, rec *Record, ttl time.Duration) error
	// Touch returns the session's record and renews its TTL and its
	// slots'; nil (no error) when there is no such session (expired, or
	// never made); Record.Ended when it was released.
	Touch(ctx context.Context, sid, tenant string, ttl time.Duration) (*Record, error)
	// Release ends the session for the fleet: its slots are freed and
	// its record marked Ended for ttl.
	Release(ctx context.Context, sid, tenant string, ttl time.Duration) error
}

// Options configure Open; nil means the defaults.
type Options struct {
	// Prefix starts every key. Default "toolshed:".
	Prefix string
	// Timeout bounds one round trip (dial, read, write), so that a store
	// that stopped answering costs a request this long, not the client's
	// patience. Default 500 ms.
	Timeout time.Duration
	// Logger logs the store going away and coming back; nil: none.
	Logger *slog.Logger
	// RootCAs are the authorities a rediss:// server's certificate must
	// chain to; nil: the system's (SSL_CERT_FILE and SSL_CERT_DIR are
	// honoured there).
	RootCAs *x509.CertPool
}

// Redis is a Store on Redis or Valkey. It is safe for concurrent use.
type Redis struct {
	c      *redis.Client
	prefix string
	log    *slog.Logger
	where  string // the URL, password redacted

	errs prometheus.Counter
	up   prometheus.Gauge

	mu      sync.Mutex
	down    bool          // the last operation failed
	retryAt time.Time     // while down: operations before it fail at once
	backoff time.Duration // while down: the wait after the next failure
}

var (
	_ Store           = (*Redis)(nil)
	_ artifact.Shared = (*Redis)(nil)
)

// Validate checks a store URL without connecting: redis:// or rediss://
// (TLS), a host, a database number as the path. Its errors name the
// problem and never the password.
func Validate(rawURL string) error { return redisurl.Validate(rawURL) }

// Redact is the URL with its password masked, for logs.
func Redact(rawURL string) string { return redisurl.Redact(rawURL) }

func parse(rawURL string) (*redis.Options, error) {
	if err := redisurl.Validate(rawURL); err != nil {
		return nil, err
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		// go-redis's message may quote the URL: say what is wrong
		// without the password.
		msg := err.Error()
		if u, perr := url.Parse(rawURL); perr == nil {
			if p, ok := u.User.Password(); ok && p != "" {
				msg = strings.ReplaceAll(msg, p, "xxxxx")
			}
		}
		return nil, errors.New(msg)
	}
	return opts, nil
}

// Open connects to the store at rawURL (see Validate). It does not wait
// for the store: one that is down at start is reported by the first
// operation, and the caller runs on its own memory meanwhile.
func Open(rawURL string, o *Options) (*Redis, error) {
	opts, err := parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("session store %s: %w", Redact(rawURL), err)
	}
	var oo Options
	if o != nil {
		oo = *o
	}
	if oo.Prefix == "" {
		oo.Prefix = "toolshed:"
	}
	if oo.Timeout <= 0 {
		oo.Timeout = 500 * time.Millisecond
	}
	if oo.Logger == nil {
		oo.Logger = slog.New(slog.DiscardHandler)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = oo.Timeout, oo.Timeout, oo.Timeout, oo.Timeout
	opts.MaxRetries = 1
	opts.DialerRetries = 1
	opts.DisableIdentity = true // CLIENT SETINFO: older servers and some managed ones refuse it
	if opts.TLSConfig != nil && oo.RootCAs != nil {
		opts.TLSConfig.RootCAs = oo.RootCAs
	}
	quietLibrary.Do(func() { redis.SetLogger(discard{}) })
	r := &Redis{c: redis.NewClient(opts), prefix: oo.Prefix, log: oo.Logger, where: Redact(rawURL),
		errs: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolshed_session_store_errors_total",
			Help: "Session store operations that failed (the replica fell back on its own memory and limits)."}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolshed_session_store_up",
			Help: "1 while the session store answers, 0 after an operation failed (limits are per replica then)."}),
	}
	r.up.Set(1)
	return r, nil
}

// quietLibrary: go-redis logs every failed dial to stderr itself (a line a
// request during an outage); the store's own log says it once (note).
var quietLibrary sync.Once

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

// Collectors are the store's series, for a metrics registry.
func (r *Redis) Collectors() []prometheus.Collector { return []prometheus.Collector{r.errs, r.up} }

// Ping checks the store answers (backing off or not).
func (r *Redis) Ping(ctx context.Context) error { return r.note(r.c.Ping(ctx).Err()) }

// Close closes the connections.
func (r *Redis) Close() error { return r.c.Close() }

// Client is the connection, for a store of other things beside the
// sessions (artifacts).
func (r *Redis) Client() *redis.Client { return r.c }

// Backing off: after a failure, operations fail at once (no round trip)
// for a while, 250 ms doubling to 5 s while failures go on, so that a
// store that hangs costs a request its timeout once in a while, not every
// request; the first operation after the wait tries the store again.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// errBackingOff is what an operation returns while the store is backed
// off.
var errBackingOff = errors.New("unreachable at the last try; not tried again yet")

// gate fails an operation at once while the store is backed off.
func (r *Redis) gate() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down && time.Now().Before(r.retryAt) {
		return fmt.Errorf("session store: %w", errBackingOff)
	}
	return nil
}

// note records the outcome of one operation: the error counter, the up
// gauge, the backoff, and a log line when the store goes away or comes
// back.
func (r *Redis) note(err error) error {
	r.mu.Lock()
	was := r.down
	r.down = err != nil
	if err != nil {
		r.backoff = min(max(2*r.backoff, firstBackoff), maxBackoff)
		r.retryAt = time.Now().Add(r.backoff)
	} else {
		r.backoff = 0
	}
	r.mu.Unlock()
	if err != nil {
		r.errs.Inc()
		r.up.Set(0)
		if !was {
			r.log.Warn("session store unreachable: sessions and limits are this replica's own until it returns", "store", r.where, "error", err)
		}
		return fmt.Errorf("session store: %w", err)
	}
	r.up.Set(1)
	if was {
		r.log.Info("session store reachable again: sessions and limits are the fleet's", "store", r.where)
	}
	return nil
}

// A session id is a bearer credential; the store holds only its hash
// (keys and slot members), so whoever reads the store gets no id to use.
func hashID(sid string) string {
	h := sha256.Sum256([]byte(sid))
	return hex.EncodeToString(h[:16])
}

func (r *Redis) recordKey(sid string) string    { return r.prefix + "session:" + hashID(sid) }
func (r *Redis) allKey() string                 { return r.prefix + "sessions" }
func (r *Redis) tenantKey(tenant string) string { return r.prefix + "sessions:tenant:" + tenant }

// now is the server's clock in milliseconds, inside a script: every
// replica scores against one clock.
const luaNow = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// admitScript: KEYS all, tenant; ARGV the id's hash, max, share, ttl_ms. Returns 0
// admitted, 1 full, 2 at share.
var admitScript = redis.NewScript(luaNow + `
local ttl = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local share = tonumber(ARGV[3])
if share > 0 and redis.call('ZCARD', KEYS[2]) >= share then return 2 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 1 end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return 0
`)

// touchScript: KEYS record, all, tenant; ARGV the id's hash, ttl_ms. Returns the
// record, or false when there is none.
var touchScript = redis.NewScript(luaNow + `
local ttl = tonumber(ARGV[2])
local rec = redis.call('GET', KEYS[1])
if not rec then return false end
redis.call('PEXPIRE', KEYS[1], ttl)
if redis.call('ZADD', KEYS[2], 'XX', 'CH', now + ttl, ARGV[1]) == 1 then redis.call('PEXPIRE', KEYS[2], ttl) end
if redis.call('ZADD', KEYS[3], 'XX', 'CH', now + ttl, ARGV[1]) == 1 then redis.call('PEXPIRE', KEYS[3], ttl) end
return rec
`)

// saveScript: KEYS record, all, tenant; ARGV the id's hash, ttl_ms, record, the
// record as read before ("" for none). Returns -1 when the record is no
// longer the one read (read again), 0 when the session was ended (left
// so), 1 saved.
var saveScript = redis.NewScript(luaNow + `
local ttl = tonumber(ARGV[2])
local cur = redis.call('GET', KEYS[1])
if (cur or '') ~= ARGV[4] then return -1 end
if cur then
  local ok, old = pcall(cjson.decode, cur)
  if ok and type(old) == 'table' and old.ended then return 0 end
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
redis.call('ZADD', KEYS[3], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('PEXPIRE', KEYS[3], ttl)
return 1
`)

// Admit implements Store.
func (r *Redis) Admit(ctx context.Context, sid, tenant string, lim Limits) (Admission, error) {
	if err := r.gate(); err != nil {
		return Full, err
	}
	n, err := admitScript.Run(ctx, r.c, []string{r.allKey(), r.tenantKey(tenant)},
		hashID(sid), lim.Max, max(lim.PerTenant, 0), max(lim.TTL.Milliseconds(), 1)).Int()
	if err := r.note(err); err != nil {
		return Full, err
	}
	return Admission(n), nil
}

// Save implements Store.
// The discovered tools saved are the union of the record's and rec's
// (the record's order first): two replicas discovering for one session at
// once both keep theirs. The record is read, merged and written back only
// if unchanged meanwhile (else read again).
func (r *Redis) Save(ctx context.Context, sid string, rec *Record, ttl time.Duration) error {
	if err := r.gate(); err != nil {
		return err
	}
	for range 8 {
		cur, err := r.c.Get(ctx, r.recordKey(sid)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return r.note(err)
		}
		merged := *rec
		var old Record
		if cur != "" && json.Unmarshal([]byte(cur), &old) == nil {
			merged.Discovered = union(old.Discovered, rec.Discovered)
		}
		b, err := json.Marshal(&merged)
		if err != nil {
			return fmt.Errorf("session store: %w", err)
		}
		n, err := saveScript.Run(ctx, r.c, []string{r.recordKey(sid), r.allKey(), r.tenantKey(rec.Tenant)},
			hashID(sid), max(ttl.Milliseconds(), 1), b, cur).Int()
		if err != nil || n != -1 {
			return r.note(err)
		}
	}
	return r.note(errors.New("the session's record kept changing under the save"))
}

// union is a's names, then b's not in a.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Touch implements Store.
func (r *Redis) Touch(ctx context.Context, sid, tenant string, ttl time.Duration) (*Record, error) {
	if err := r.gate(); err != nil {
		return nil, err
	}
	s, err := touchScript.Run(ctx, r.c, []string{r.recordKey(sid), r.allKey(), r.tenantKey(tenant)},
		hashID(sid), max(ttl.Milliseconds(), 1)).Text()
	if errors.Is(err, redis.Nil) {
		return nil, r.note(nil)
	}
	if err := r.note(err); err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal([]byte(s), &rec); err != nil {
		return nil, fmt.Errorf("session store: session record: %w", err)
	}
	return &rec, nil
}

// Release implements Store.
func (r *Redis) Release(ctx context.Context, sid, tenant string, ttl time.Duration) error {
	if err := r.gate(); err != nil {
		return err
	}
	b, _ := json.Marshal(&Record{Tenant: tenant, Ended: true})
	p := r.c.TxPipeline()
	p.Set(ctx, r.recordKey(sid), b, max(ttl, time.Millisecond))
	p.ZRem(ctx, r.allKey(), hashID(sid))
	p.ZRem(ctx, r.tenantKey(tenant), hashID(sid))
	_, err := p.Exec(ctx)
	return r.note(err)
}

func (r *Redis) blobKey(id string) string { return r.prefix + "artifact:" + id }

// PutBlob keeps an artifact's bytes for ttl (host/artifact's Shared).
func (r *Redis) PutBlob(ctx context.Context, id string, data []byte, ttl time.Duration) error {
	if err := r.gate(); err != nil {
		return err
	}
	return r.note(r.c.Set(ctx, r.blobKey(id), data, max(ttl, time.Millisecond)).Err())
}

// GetBlob returns what PutBlob kept; artifact.ErrNotFound when nothing
// is.
func (r *Redis) GetBlob(ctx context.Context, id string) ([]byte, error) {
	if err := r.gate(); err != nil {
		return nil, err
	}
	b, err := r.c.Get(ctx, r.blobKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, errors.Join(r.note(nil), artifact.ErrNotFound)
	}
	if err := r.note(err); err != nil {
		return nil, err
	}
	return b, nil
}
