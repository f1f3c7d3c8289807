package wasm

// The Extism ABI (docs/ABI.md, "Extism plugins"): the extism:host/env
// import module that plugins built with any Extism PDK use, implemented
// by Toolshed itself over its own sandbox, not by Extism's runtime.
//
// Extism keeps a plugin's input, output, error and the blocks it
// allocates in a second WebAssembly module, the "kernel", with a memory of
// its own. Here, as in extism/js-sdk, the kernel is host-side state per
// instance (extismState): blocks are Go byte slices addressed as
// index<<48 | offset, index 0 never used, so a pointer is either a live
// block and an offset inside it or refused. The bytes they hold are
// charged to the instance's memory account beside its linear memory, and
// both together stay within the plugin's memory limit (memAccount's
// ceiling): one cap for everything the instance holds. Blocks live for one
// call; vars live as long as the instance, which is its session's only.
//
// Every function runs on the goroutine of the call, with the instance's
// call lock held: the state needs no lock of its own. A pointer or length
// that is not the plugin's ends the call with a clear error (the
// instance is discarded); a request the plugin's grants refuse (http,
// before it leaves the host) ends it as a tool error the model can read.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolshed/toolshed/host/wasm/internal/wasmcheck"
	"github.com/toolshed/toolshed/sdk/abi"
)

// ExtismModule is the import module of the Extism ABI.
const ExtismModule = "extism:host/env"

// Limits of the Extism ABI's host-side state.
const (
	// blockOverhead is charged per live block beside its bytes, so that
	// a storm of empty allocations counts too.
	blockOverhead = 64
	// maxVarBytes bounds one instance's vars, keys and values together
	// (Extism's default).
	maxVarBytes = 1 << 20
	// addrShift places the block index in a pointer's high bits.
	addrShift  = 48
	offsetMask = 1<<addrShift - 1
	// logOff is get_log_level's answer when logging is not granted: no
	// level is high enough, so PDKs skip formatting the messages.
	logOff = math.MaxInt32
)

// extismFunc is one function of extism:host/env.
type extismFunc struct {
	name            string
	params, results []api.ValueType
	fn              func(ctx context.Context, p *Plugin, in *instance, st *extismState, stack []uint64)
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// extismFuncs is extism:host/env as this host provides it, sorted by name.
var extismFuncs = []extismFunc{
	{"alloc", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = st.alloc(in, int64(s[0]), "alloc")
	}},
	{"config_get", []api.ValueType{i64}, []api.ValueType{i64}, extConfigGet},
	{"error_get", nil, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = st.errBlock
	}},
	{"error_set", []api.ValueType{i64}, nil, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		if s[0] != 0 {
			st.block(s[0], 0, "error_set") // must be a live block
		}
		st.errBlock = s[0]
	}},
	{"free", []api.ValueType{i64}, nil, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		st.free(in, s[0])
	}},
	{"get_log_level", nil, []api.ValueType{i32}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = api.EncodeI32(p.extismLogLevel(ctx))
	}},
	{"http_headers", nil, []api.ValueType{i64}, extHTTPHeaders},
	{"http_request", []api.ValueType{i64, i64}, []api.ValueType{i64}, extHTTPRequest},
	{"http_status_code", nil, []api.ValueType{i32}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = api.EncodeI32(st.httpStatus)
	}},
	{"input_length", nil, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = st.input.n
	}},
	{"input_load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		b := st.inputBytes(s[0]&offsetMask, 8, "input_load_u64")
		s[0] = le64(b)
	}},
	{"input_load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = uint64(st.inputBytes(s[0]&offsetMask, 1, "input_load_u8")[0])
	}},
	{"input_offset", nil, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = st.input.addr
	}},
	{"input_set", []api.ValueType{i64, i64}, nil, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		st.block(s[0], s[1], "input_set")
		st.input = region{s[0], s[1]}
	}},
	{"length", []api.ValueType{i64}, []api.ValueType{i64}, extLength},
	{"length_unsafe", []api.ValueType{i64}, []api.ValueType{i64}, extLength},
	{"load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = le64(st.block(s[0], 8, "load_u64"))
	}},
	{"load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = uint64(st.block(s[0], 1, "load_u8")[0])
	}},
	{"log_debug", []api.ValueType{i64}, nil, extLog(slog.LevelDebug)},
	{"log_error", []api.ValueType{i64}, nil, extLog(slog.LevelError)},
	{"log_info", []api.ValueType{i64}, nil, extLog(slog.LevelInfo)},
	{"log_trace", []api.ValueType{i64}, nil, extLog(slog.LevelDebug)},
	{"log_warn", []api.ValueType{i64}, nil, extLog(slog.LevelWarn)},
	{"memory_bytes", nil, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = uint64(st.held)
	}},
	{"output_length", nil, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = st.output.n
	}},
	{"output_offset", nil, []api.ValueType{i64}, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		s[0] = st.output.addr
	}},
	{"output_set", []api.ValueType{i64, i64}, nil, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		if s[1] > uint64(p.output) {
			st.failf("output_set: an output of %d bytes exceeds the plugin's limit of %d", s[1], p.output)
		}
		st.block(s[0], s[1], "output_set")
		st.output = region{s[0], s[1]}
	}},
	{"reset", nil, nil, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		st.reset(in)
	}},
	{"store_u64", []api.ValueType{i64, i64}, nil, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		b := st.block(s[0], 8, "store_u64")
		for i := range 8 {
			b[i] = byte(s[1] >> (8 * i))
		}
	}},
	{"store_u8", []api.ValueType{i64, i32}, nil, func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		st.block(s[0], 1, "store_u8")[0] = byte(s[1])
	}},
	{"var_get", []api.ValueType{i64}, []api.ValueType{i64}, extVarGet},
	{"var_set", []api.ValueType{i64, i64}, nil, extVarSet},
}

// ExtismFunctions lists the functions of extism:host/env this host
// provides, sorted, with their signatures ("alloc(i64) -> i64").
func ExtismFunctions() []string {
	out := make([]string, len(extismFuncs))
	for i, f := range extismFuncs {
		out[i] = f.name + signature(valueTypes(f.params), valueTypes(f.results))
	}
	return out
}

// instantiateExtismModule instantiates extism:host/env in rt.
func (p *Plugin) instantiateExtismModule(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(ExtismModule)
	for _, f := range extismFuncs {
		fn := f.fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
				in := p.instanceOf(m)
				if in == nil || in.ext == nil {
					// The initialiser, or a capture: no call is in progress.
					panic(fmt.Errorf("%s: %s is only available during a call, not while the module initialises", ExtismModule, f.name))
				}
				defer in.ext.recoverFault()
				fn(ctx, p, in, in.ext, stack)
			}), f.params, f.results).
			Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// region is a span of a block: input and output.
type region struct{ addr, n uint64 }

// extismState is one instance's side of the Extism ABI. It is used only
// under the instance's call lock.
type extismState struct {
	blocks   [][]byte // by index; nil: free (index 0 is never used)
	live     []bool
	freeIdx  []uint32 // free indices, reused last in first out
	held     int64    // bytes of live blocks, overhead included
	input    region
	output   region
	errBlock uint64

	vars     map[string][]byte
	varBytes int64

	httpStatus  int32
	httpHeaders map[string]string

	// fault is what ended the call from the host's side: a pointer that is
	// not the plugin's, a limit reached (a *CallError for the host), or a
	// refusal the model can read (refused true: a tool error).
	fault   error
	refused bool
	// logsDropped counts log messages over the quota in this call.
	logsDropped int
}

func newExtismState() *extismState {
	return &extismState{blocks: [][]byte{nil}, live: []bool{false}, vars: map[string][]byte{}}
}

// extismFault is the panic that ends a call from a host function; the
// call's error is the state's fault.
type extismFault struct{ err error }

func (st *extismState) failf(format string, args ...any) {
	err := fmt.Errorf(format, args...)
	if st.fault == nil {
		st.fault = err
	}
	panic(extismFault{err})
}

// refuse ends the call as a tool error: the plugin asked for what its
// grants do not allow.
func (st *extismState) refuse(err error) {
	if st.fault == nil {
		st.fault, st.refused = err, true
	}
	panic(extismFault{err})
}

// recoverFault turns an extismFault into the error wazero ends the call
// with; other panics go on.
func (st *extismState) recoverFault() {
	if r := recover(); r != nil {
		if f, ok := r.(extismFault); ok {
			panic(f.err)
		}
		panic(r)
	}
}

// block returns n bytes at addr, which must lie in a live block.
func (st *extismState) block(addr, n uint64, op string) []byte {
	idx, off := addr>>addrShift, addr&offsetMask
	if idx == 0 || idx >= uint64(len(st.blocks)) || !st.live[idx] {
		st.failf("%s: %#x is not the address of a live block", op, addr)
	}
	b := st.blocks[idx]
	if off > uint64(len(b)) || n > uint64(len(b))-off {
		st.failf("%s: %d bytes at %#x are outside its %d-byte block", op, n, addr, len(b))
	}
	return b[off : off+n]
}

// whole returns the block that starts at addr.
func (st *extismState) whole(addr uint64, op string) []byte {
	if addr&offsetMask != 0 {
		st.failf("%s: %#x is not the start of a block", op, addr)
	}
	st.block(addr, 0, op) // checks it is live
	return st.blocks[addr>>addrShift]
}

// inputBytes returns n bytes at offset off of the input.
func (st *extismState) inputBytes(off, n uint64, op string) []byte {
	if st.input.addr == 0 {
		st.failf("%s: the call has no input", op)
	}
	if off > st.input.n || n > st.input.n-off {
		st.failf("%s: %d bytes at offset %d are outside the %d-byte input", op, n, off, st.input.n)
	}
	return st.block(st.input.addr+off, n, op)
}

// alloc makes a block of n bytes, charged to the instance.
func (st *extismState) alloc(in *instance, n int64, op string) uint64 {
	limit := int64(in.plugin.pages) << 16
	if n < 0 || n > limit {
		st.failf("%s: %d bytes: out of memory: the plugin's memory is limited to %d MiB", op, uint64(n), limit>>20)
	}
	st.charge(in, n+blockOverhead, op)
	st.held += n + blockOverhead
	b := make([]byte, n)
	var idx uint32
	if k := len(st.freeIdx); k > 0 {
		idx, st.freeIdx = st.freeIdx[k-1], st.freeIdx[:k-1]
		st.blocks[idx], st.live[idx] = b, true
	} else {
		idx = uint32(len(st.blocks))
		st.blocks, st.live = append(st.blocks, b), append(st.live, true)
	}
	return uint64(idx) << addrShift
}

// charge takes n more bytes for the instance's blocks or vars: within the
// plugin's memory limit with its linear memory (checked here, whatever
// the account), and charged to its account (the limit again, on Linux
// with growth counted, and the memory budget). A refusal ends the call.
func (st *extismState) charge(in *instance, n int64, op string) {
	limit, linear := int64(in.plugin.pages)<<16, linearSize(in)
	if side := st.held + st.varBytes + n; n > 0 && side+linear > limit {
		st.failf("%s: %d bytes: %w", op, n, &CeilingError{Limit: limit, Linear: linear, Side: side})
	}
	if err := in.acct.holdSide(n, linear); err != nil {
		st.failf("%s: %d bytes: %w", op, n, err)
	}
}

// store makes a block holding data.
func (st *extismState) store(in *instance, data []byte, op string) uint64 {
	addr := st.alloc(in, int64(len(data)), op)
	copy(st.blocks[addr>>addrShift], data)
	return addr
}

// free frees the block that starts at addr; anything else (0, a freed
// block, an address inside one) is ignored, as Extism's kernel does.
func (st *extismState) free(in *instance, addr uint64) {
	idx := addr >> addrShift
	if addr&offsetMask != 0 || idx == 0 || idx >= uint64(len(st.blocks)) || !st.live[idx] {
		return
	}
	n := int64(len(st.blocks[idx])) + blockOverhead
	st.blocks[idx], st.live[idx] = nil, false
	st.freeIdx = append(st.freeIdx, uint32(idx))
	st.held -= n
	in.acct.holdSide(-n, 0)
}

// reset frees every block: between calls, and when the plugin asks.
func (st *extismState) reset(in *instance) {
	in.acct.holdSide(-st.held, 0)
	st.blocks, st.live, st.freeIdx = st.blocks[:1], st.live[:1], st.freeIdx[:0]
	st.held = 0
	st.input, st.output, st.errBlock = region{}, region{}, 0
}

// str reads the block at addr as text (keys, messages).
func (st *extismState) str(addr uint64, op string) string {
	return string(st.whole(addr, op))
}

func extLength(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
	idx := s[0] >> addrShift
	if s[0]&offsetMask != 0 || idx == 0 || idx >= uint64(len(st.blocks)) || !st.live[idx] {
		s[0] = 0 // not a block: Extism's answer
		return
	}
	s[0] = uint64(len(st.blocks[idx]))
}

func extConfigGet(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
	key := st.str(s[0], "config_get")
	v, ok := p.caps.config[key]
	if !ok {
		// Not granted, or not set: Extism's answer for a missing key.
		s[0] = 0
		return
	}
	s[0] = st.store(in, []byte(v), "config_get")
}

func extVarGet(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
	key := st.str(s[0], "var_get")
	st.free(in, s[0])
	v, ok := st.vars[key]
	if !ok {
		s[0] = 0
		return
	}
	s[0] = st.store(in, v, "var_get")
}

func extVarSet(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
	key := st.str(s[0], "var_set")
	var val []byte
	if s[1] != 0 {
		val = slices.Clone(st.whole(s[1], "var_set"))
	}
	st.free(in, s[0])
	st.free(in, s[1])
	size := func(k string, v []byte) int64 { return int64(len(k)+len(v)) + blockOverhead }
	old, had := st.vars[key]
	d := -size(key, old)
	if !had {
		d = 0
	}
	if s[1] == 0 {
		delete(st.vars, key)
		st.varBytes += d
		in.acct.holdSide(d, 0)
		return
	}
	d += size(key, val)
	if st.varBytes+d > maxVarBytes {
		st.failf("var_set: the plugin's vars would hold %d bytes; at most %d", st.varBytes+d, maxVarBytes)
	}
	st.charge(in, d, "var_set")
	st.vars[key] = val
	st.varBytes += d
}

// extLog writes a message to the host log when the plugin is granted
// "log", within its log quota; the block is freed either way. Messages
// over the quota are dropped and counted (a PDK cannot handle a refusal).
func extLog(level slog.Level) func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
	return func(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
		msg := st.str(s[0], "log")
		st.free(in, s[0])
		if !p.caps.log {
			return
		}
		if len(msg) > maxLogBytes {
			msg = msg[:maxLogBytes] + "…"
		}
		if err := in.quota.log.charge("log", "messages", int64(len(msg)), p.lim.logLines, p.lim.logBytes); err != nil {
			st.logsDropped++
			return
		}
		p.host.log.Log(ctx, level, "plugin log", "plugin", p.name, "message", msg)
	}
}

// extismLogLevel is get_log_level's answer: Extism's levels are trace 0,
// debug 1, info 2, warn 3, error 4.
func (p *Plugin) extismLogLevel(ctx context.Context) int32 {
	switch {
	case !p.caps.log:
		return logOff
	case p.host.log.Enabled(ctx, slog.LevelDebug):
		return 1
	}
	return 2
}

// extismHTTPRequest is the JSON of http_request's first argument.
type extismHTTPRequest struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
}

// extHTTPRequest runs http_request through the "http" capability: its
// origins, its redirects checked again, its private addresses refused,
// its size limit, the call's deadline. A request the grants refuse ends
// the call as a tool error saying so.
func extHTTPRequest(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
	raw := st.whole(s[0], "http_request")
	var req extismHTTPRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		st.failf("http_request: the request is not the JSON of an Extism HTTP request: %v", err)
	}
	var body []byte
	if s[1] != 0 {
		body = slices.Clone(st.whole(s[1], "http_request"))
	}
	st.free(in, s[0])
	st.free(in, s[1])
	st.httpStatus, st.httpHeaders = 0, nil
	if len(p.caps.http) == 0 {
		st.refuse(notGranted("http"))
	}
	out, err := fetch(ctx, &p.caps, abi.HTTPRequest{URL: req.URL, Method: req.Method, Headers: req.Headers, Body: body})
	if err != nil {
		if ctx.Err() != nil {
			stop(ctx) // the deadline: the call ends as timed out
		}
		st.refuse(err)
	}
	reply := out.(abi.HTTPReply)
	if reply.Truncated {
		st.refuse(fmt.Errorf("http: the response from %s is larger than the %d bytes the plugin may receive", req.URL, len(reply.Body)))
	}
	st.httpStatus = int32(reply.Status)
	st.httpHeaders = map[string]string{}
	for k, v := range reply.Headers {
		st.httpHeaders[strings.ToLower(k)] = v
	}
	if len(reply.Body) == 0 {
		s[0] = 0
		return
	}
	s[0] = st.store(in, reply.Body, "http_request")
}

func extHTTPHeaders(ctx context.Context, p *Plugin, in *instance, st *extismState, s []uint64) {
	if st.httpHeaders == nil {
		s[0] = 0
		return
	}
	b, _ := json.Marshal(st.httpHeaders) // sorted keys
	s[0] = st.store(in, b, "http_headers")
}

// linearSize is the instance's linear memory size in bytes.
func linearSize(in *instance) int64 {
	if in.mod == nil || in.mod.Memory() == nil {
		return 0
	}
	return int64(in.mod.Memory().Size())
}

func le64(b []byte) uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

// valueTypes converts wazero's value types (the same bytes) for signature.
func valueTypes(ts []api.ValueType) []wasmcheck.ValueType {
	out := make([]wasmcheck.ValueType, len(ts))
	for i, t := range ts {
		out[i] = wasmcheck.ValueType(t)
	}
	return out
}
