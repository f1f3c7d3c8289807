package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/safepath"
	"github.com/toolshed/toolshed/sdk/abi"
)

// Grants are what the operator gives one plugin. Nothing is granted by
// default; the plugin gets the intersection with what its manifest asks.
type Grants struct {
	// Log lets the plugin write to the host log.
	Log bool
	// Config holds configuration values the plugin may read, by key.
	Config map[string]string
	// Mounts names host directories the plugin may read, by mount name.
	Mounts map[string]string
	// HTTP allows outbound requests.
	HTTP HTTPGrant
	// SQL names the database the plugin may query ("" grants none).
	SQL string
	// Artifacts is the directory where the plugin may store artifacts
	// ("" grants none). Files get unique names; at most 16 MiB each,
	// within the Caps' artifact quotas.
	Artifacts string
	// Client lists the client features granted ("log", "progress",
	// "sample", "elicit"): what the plugin may ask of the MCP client a
	// call comes from (client.go).
	Client []string
	// SHA256, when set, pins the grants to one module: a plugin whose
	// module has another sha256 gets no grants at all (and a warning
	// naming both hashes is logged), as a plugin the operator never
	// approved. Hex, as in the manifest.
	SHA256 string
}

// HTTPGrant is the outbound HTTP allowlist.
type HTTPGrant struct {
	// Allow lists origins: scheme://host[:port] (default ports implied).
	Allow []string
	// AllowPrivate permits loopback, private and link-local addresses,
	// which are refused otherwise (after DNS resolution, on every dial).
	AllowPrivate bool
	// MaxResponseBytes caps a response body; 0 means 1 MiB.
	MaxResponseBytes int64
	// Timeout bounds one request; 0 means the call's own deadline.
	Timeout time.Duration
}

// SQLRunner runs the "sql" capability for a granted database. It must
// enforce read-only access itself; the plugin never sees a connection.
type SQLRunner interface {
	QuerySQL(ctx context.Context, database string, req abi.SQLRequest) (*abi.SQLReply, error)
}

// TenantSQLRunner is an SQLRunner that shares each database among
// tenants: the queries of a tenant's sessions (NewTenantSession) run
// through QueryTenantSQL, so that one tenant cannot hold every slot.
// host/sqlcap.Service is one.
type TenantSQLRunner interface {
	SQLRunner
	QueryTenantSQL(ctx context.Context, tenant, database string, req abi.SQLRequest) (*abi.SQLReply, error)
}

// effective is the intersection of a manifest's requests and the grants.
type effective struct {
	log       bool
	config    map[string]string
	mounts    map[string]string
	http      []string // normalised origins
	httpG     HTTPGrant
	sql       string
	artifacts string
	client    *http.Client
	mcp       []string // client features (client.go)
}

func intersect(m *manifest.Manifest, g Grants) effective {
	e := effective{log: m.Capabilities.Log && g.Log, config: map[string]string{}, mounts: map[string]string{}, httpG: g.HTTP}
	for _, k := range m.Capabilities.Config {
		if v, ok := g.Config[k]; ok {
			e.config[k] = v
		}
	}
	for _, k := range m.Capabilities.Mounts {
		if d, ok := g.Mounts[k]; ok {
			e.mounts[k] = d
		}
	}
	wantAll := false
	want := map[string]bool{}
	for _, o := range m.Capabilities.HTTP {
		if o == "*" {
			wantAll = true
		} else if n, err := normOrigin(o); err == nil {
			want[n] = true
		}
	}
	for _, o := range g.HTTP.Allow {
		if n, err := normOrigin(o); err == nil && (wantAll || want[n]) {
			e.http = append(e.http, n)
		}
	}
	sort.Strings(e.http)
	if m.Capabilities.SQL {
		e.sql = g.SQL
	}
	if m.Capabilities.Artifacts {
		e.artifacts = g.Artifacts
	}
	e.mcp = intersectClient(m.Capabilities.Client, g.Client)
	if len(e.http) > 0 {
		e.client = newHTTPClient(e)
	}
	return e
}

func (e effective) describe() string {
	var parts []string
	if e.log {
		parts = append(parts, "log")
	}
	if len(e.config) > 0 {
		parts = append(parts, "config["+strings.Join(sortedKeys(e.config), ",")+"]")
	}
	if len(e.mounts) > 0 {
		parts = append(parts, "mounts["+strings.Join(sortedKeys(e.mounts), ",")+"]")
	}
	if len(e.http) > 0 {
		parts = append(parts, "http["+strings.Join(e.http, ",")+"]")
	}
	if e.sql != "" {
		parts = append(parts, "sql["+e.sql+"]")
	}
	if e.artifacts != "" {
		parts = append(parts, "artifacts")
	}
	if len(e.mcp) > 0 {
		parts = append(parts, "client["+strings.Join(e.mcp, ",")+"]")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

func denied(m *manifest.Manifest, e effective) string {
	var parts []string
	if m.Capabilities.Log && !e.log {
		parts = append(parts, "log")
	}
	for _, k := range m.Capabilities.Config {
		if _, ok := e.config[k]; !ok {
			parts = append(parts, "config."+k)
		}
	}
	for _, k := range m.Capabilities.Mounts {
		if _, ok := e.mounts[k]; !ok {
			parts = append(parts, "mounts."+k)
		}
	}
	if len(m.Capabilities.HTTP) > 0 && len(e.http) == 0 {
		parts = append(parts, "http")
	}
	if m.Capabilities.SQL && e.sql == "" {
		parts = append(parts, "sql")
	}
	if m.Capabilities.Artifacts && e.artifacts == "" {
		parts = append(parts, "artifacts")
	}
	parts = append(parts, deniedClient(m.Capabilities.Client, e.mcp)...)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// normOrigin returns scheme://host:port, lowercase, with the default port.
func normOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", s)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port)), nil
}

// Limits on what crosses host_call.
const (
	maxOpBytes      = 64
	maxRequestBytes = 1 << 20
	maxLogBytes     = 4 << 10
	maxFileBytes    = 8 << 20
	maxDirEntries   = 10_000
	defaultHTTPBody = 1 << 20
)

func (p *Plugin) instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	i32 := api.ValueTypeI32
	_, err := rt.NewHostModuleBuilder(abi.HostModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(p.hostCall), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export(abi.HostCall).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(p.hostResult), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export(abi.HostResult).
		Instantiate(ctx)
	return err
}

func (p *Plugin) instanceOf(m api.Module) *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byModule[m]
}

func (p *Plugin) hostCall(ctx context.Context, m api.Module, stack []uint64) {
	fail := func() { stack[0] = api.EncodeI32(-1) }
	in := p.instanceOf(m)
	opPtr, opLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	reqPtr, reqLen := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	if in == nil || opLen > maxOpBytes || reqLen > maxRequestBytes {
		fail()
		return
	}
	op, ok1 := m.Memory().Read(opPtr, opLen)
	req, ok2 := m.Memory().Read(reqPtr, reqLen)
	if !ok1 || !ok2 {
		fail()
		return
	}
	var reply abi.Reply
	ok, err := p.dispatch(ctx, in, string(op), append([]byte(nil), req...))
	if err != nil {
		reply.Error = err.Error()
	} else if ok != nil {
		b, merr := json.Marshal(ok)
		if merr != nil {
			reply.Error = "host: " + merr.Error()
		} else {
			reply.OK = b
		}
	}
	in.reply, _ = json.Marshal(reply)
	stack[0] = api.EncodeI32(int32(len(in.reply)))
}

func (p *Plugin) hostResult(ctx context.Context, m api.Module, stack []uint64) {
	in := p.instanceOf(m)
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	if in == nil || in.reply == nil || int(n) < len(in.reply) || !m.Memory().Write(ptr, in.reply) {
		stack[0] = api.EncodeI32(-1)
		return
	}
	stack[0] = api.EncodeI32(int32(len(in.reply)))
	in.reply = nil
}

// notGranted is the error a plugin sees for a capability it lacks.
func notGranted(cap string) error {
	return fmt.Errorf("capability %q is not granted to this plugin (the manifest must request it and the operator grant it)", cap)
}

// dispatch runs one capability operation for instance in, within its
// quotas.
func (p *Plugin) dispatch(ctx context.Context, in *instance, op string, req []byte) (any, error) {
	e := &p.caps
	decode := func(v any) error {
		if err := json.Unmarshal(req, v); err != nil {
			return fmt.Errorf("%s: malformed request: %v", op, err)
		}
		return nil
	}
	switch op {
	case abi.OpLog:
		var r abi.LogRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		if !e.log {
			return nil, notGranted("log")
		}
		msg := r.Message
		if len(msg) > maxLogBytes {
			msg = msg[:maxLogBytes] + "…"
		}
		if err := in.quota.log.charge("log", "messages", int64(len(msg)), p.lim.logLines, p.lim.logBytes); err != nil {
			return nil, err
		}
		level := map[string]slog.Level{"debug": slog.LevelDebug, "warn": slog.LevelWarn, "error": slog.LevelError}[r.Level]
		p.host.log.Log(ctx, level, "plugin log", "plugin", p.name, "message", msg)
		return nil, nil
	case abi.OpConfigGet:
		var r abi.ConfigRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		v, ok := e.config[r.Key]
		if !ok {
			return nil, notGranted("config." + r.Key)
		}
		return abi.ConfigReply{Value: v}, nil
	case abi.OpFSRead, abi.OpFSList:
		var r abi.FSRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		dir, ok := e.mounts[r.Mount]
		if !ok {
			return nil, notGranted("mounts." + r.Mount)
		}
		if op == abi.OpFSRead {
			return readMount(dir, r.Path)
		}
		return listMount(dir, r.Path)
	case abi.OpHTTP:
		var r abi.HTTPRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		if len(e.http) == 0 {
			return nil, notGranted("http")
		}
		return fetch(ctx, e, r)
	case abi.OpSQL:
		var r abi.SQLRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		if e.sql == "" {
			return nil, notGranted("sql")
		}
		if p.host.opts.SQL == nil {
			return nil, errors.New("sql: the host has no SQL backend configured")
		}
		if tr, ok := p.host.opts.SQL.(TenantSQLRunner); ok && in.owner.Load() != nil {
			return tr.QueryTenantSQL(ctx, in.owner.Load().tenant, e.sql, r)
		}
		return p.host.opts.SQL.QuerySQL(ctx, e.sql, r)
	case abi.OpArtifact:
		var r abi.ArtifactRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		if e.artifacts == "" {
			return nil, notGranted("artifacts")
		}
		if len(r.Data) > maxArtifactBytes {
			return nil, fmt.Errorf("artifact: %d bytes is over the %d-byte limit", len(r.Data), maxArtifactBytes)
		}
		if err := in.quota.artifact.charge("artifact", "artifacts", int64(len(r.Data)), p.lim.artifacts, p.lim.artifactMax); err != nil {
			return nil, err
		}
		var a artifact.Artifact
		var err error
		if ts, ok := p.host.opts.Artifacts.(TenantArtifactStore); ok && in.owner.Load() != nil {
			a, err = ts.PutFor(in.owner.Load().tenant, e.artifacts, r.Name, r.ContentType, r.Data)
		} else {
			a, err = p.host.opts.Artifacts.Put(e.artifacts, r.Name, r.ContentType, r.Data)
		}
		if errors.Is(err, artifact.ErrFull) {
			return nil, errors.New("artifact: the server's artifact store is full; try again later")
		}
		if err != nil {
			p.host.log.Warn("artifact not stored", "plugin", p.name, "error", err)
			return nil, errors.New("artifact: the host could not store it")
		}
		in.saved = append(in.saved, a)
		return abi.ArtifactReply{Name: a.ID, Path: a.Path, Size: int(a.Size)}, nil
	case abi.OpClientLog, abi.OpClientProgress, abi.OpClientSample, abi.OpClientElicit:
		return clientOp(ctx, op, req, e.mcp)
	default:
		return nil, fmt.Errorf("unknown host operation %q", op)
	}
}

func readMount(dir, p string) (any, error) {
	name, err := safepath.Clean(p)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir) // refuses paths and links that leave dir
	if err != nil {
		return nil, fmt.Errorf("fs: mount unavailable: %v", err)
	}
	defer root.Close()
	// O_NONBLOCK: opening a FIFO without a writer, or a device, must
	// not wait; the file type is then checked on the open descriptor
	// (no race with a rename), and anything but a regular file refused.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("fs: %s: %v", p, safepath.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("fs: %s: %v", p, safepath.Unwrap(err))
	}
	if st.IsDir() {
		return nil, fmt.Errorf("fs: %s is a directory", p)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("fs: %s is not a regular file (%s): only regular files can be read", p, fileKind(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fs: %s: %v", p, safepath.Unwrap(err))
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("fs: %s is larger than %d bytes", p, maxFileBytes)
	}
	return abi.FSReadReply{Data: data}, nil
}

// fileKind names a file type for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.Type().String()
}

func listMount(dir, p string) (any, error) {
	name, err := safepath.Clean(p)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("fs: mount unavailable: %v", err)
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), name)
	if err != nil {
		return nil, fmt.Errorf("fs: %s: %v", p, safepath.Unwrap(err))
	}
	out := abi.FSListReply{Entries: []abi.DirEntry{}}
	for i, d := range entries {
		if i == maxDirEntries {
			break
		}
		de := abi.DirEntry{Name: d.Name(), Dir: d.IsDir()}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			de.Size = info.Size()
		}
		out.Entries = append(out.Entries, de)
	}
	return out, nil
}

func newHTTPClient(e effective) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	if !e.httpG.AllowPrivate {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip := net.ParseIP(host)
			if ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
				ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
				return fmt.Errorf("address %s is private, loopback or link-local: refused", host)
			}
			return nil
		}
	}
	allowed := map[string]bool{}
	for _, o := range e.http {
		allowed[o] = true
	}
	return &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, MaxIdleConnsPerHost: 4,
			TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 30 * time.Second},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			o, err := normOrigin(req.URL.String())
			if err != nil || !allowed[o] {
				return fmt.Errorf("redirect to %s: origin not allowed", req.URL.Redacted())
			}
			return nil
		},
	}
}

func fetch(ctx context.Context, e *effective, r abi.HTTPRequest) (any, error) {
	origin, err := normOrigin(r.URL)
	if err != nil {
		return nil, fmt.Errorf("http: %v", err)
	}
	allowed := false
	for _, o := range e.http {
		allowed = allowed || o == origin
	}
	if !allowed {
		return nil, fmt.Errorf("http: origin %s is not allowed (allowed: %s)", origin, strings.Join(e.http, ", "))
	}
	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodGet
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, fmt.Errorf("http: method %q is not allowed", r.Method)
	}
	if e.httpG.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.httpG.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, strings.NewReader(string(r.Body)))
	if err != nil {
		return nil, fmt.Errorf("http: %v", err)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("http: %v", err)
	}
	defer resp.Body.Close()
	limit := e.httpG.MaxResponseBytes
	if limit <= 0 {
		limit = defaultHTTPBody
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("http: reading the response: %v", err)
	}
	out := abi.HTTPReply{Status: resp.StatusCode, Headers: map[string]string{}, Body: body}
	if int64(len(body)) > limit {
		out.Body, out.Truncated = body[:limit], true
	}
	for k := range resp.Header {
		out.Headers[k] = resp.Header.Get(k)
	}
	return out, nil
}

// maxArtifactBytes bounds one artifact.
const maxArtifactBytes = 16 << 20
