// Package sdk is the Go SDK for Toolshed plugins: WebAssembly modules built
// with the standard toolchain,
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o NAME.wasm .
//
// A plugin registers typed handlers in init and has an empty main:
//
//	type args struct {
//		Text string `json:"text"`
//	}
//
//	func init() {
//		sdk.Handle("countWords", func(a args) (sdk.Result, error) {
//			return sdk.Text("%d words", len(strings.Fields(a.Text))), nil
//		})
//	}
//
//	func main() {}
//
// Arguments arrive as JSON already checked against the tool's schema and
// are decoded into the handler's argument type. A handler's error becomes
// a tool error the model reads ("is_error"), not a crash. Capability
// helpers (Log, Config, ReadFile, ReadDir, Fetch, Query) reach the host;
// each returns a clear error when the operator did not grant it.
//
// The SDK implements ABI version 1 (docs/ABI.md); it does not import
// wazero. A plugin runs one call at a time: nothing here is meant for
// concurrent use. Use package sdk/plugintest to run a plugin under the real
// host in go test.
package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"sort"
	"sync"
	"unsafe"

	"github.com/toolshed/toolshed/sdk/abi"
)

// Result is what a handler returns.
type Result struct {
	// Content is the text the model reads.
	Content string
	// Structured, when not nil, is also returned as JSON.
	Structured any
	// IsError marks a tool error the model can act on.
	IsError bool
}

// Text returns a result whose content is the formatted text.
func Text(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...)}
}

// JSON returns a result whose content is v in compact JSON and whose
// structured part is v (encoded once), as encoding/json.Marshal encodes it
// (plain structs take a faster path with the same output: encode.go).
//
// Content and Structured share the same bytes, and the ABI result the SDK
// writes for it then has no "content" key: the host gives the model the
// structured JSON text as the content (docs/ABI.md), which is the same
// text, so the module does not escape it a second time.
//
// v does not escape: JSON(a) leaves a where it is (a generic function, so
// that nothing converts a to an interface that outlives the call). The
// bytes come from the SDK's arenas (arena.go).
func JSON[T any](v T) Result {
	if b, ok := marshalFast(freeTail(), any(v)); ok {
		return jsonResult(commitTail(b))
	}
	c := new(T) // a copy for encoding/json, made only on this path
	*c = v
	return jsonSlow(*c)
}

func jsonSlow(v any) Result {
	b, err := json.Marshal(v)
	if err != nil {
		return Errorf("cannot encode result: %v", err)
	}
	return jsonResult(b)
}

// jsonResult is the result whose content is the JSON text b itself (b is
// never written again).
func jsonResult(b []byte) Result {
	return Result{Content: unsafe.String(unsafe.SliceData(b), len(b)), Structured: json.RawMessage(b)}
}

// Errorf returns a tool error: text the model reads to correct itself.
func Errorf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

type handler func(raw json.RawMessage) (Result, error)

var (
	mu       sync.Mutex
	handlers = map[string]handler{}
)

// Handle registers the handler of a tool. A is the arguments' type, decoded
// from the call's JSON. It panics if the name is registered twice (a
// programming error found at start).
//
// Arguments are decoded as encoding/json.Unmarshal decodes them; for plain
// struct types a faster decoder planned here, at registration, does the
// work (decode.go). Registration also runs both decoders once on "{}", so
// that an instance that never served a call has already paid for their
// lazy initialisation.
func Handle[A any](tool string, fn func(args A) (Result, error)) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := handlers[tool]; dup {
		panic(fmt.Sprintf("sdk: tool %q registered twice", tool))
	}
	pl := planFor(reflect.TypeFor[A]())
	// The fast decoder writes through an unsafe.Pointer, which the compiler
	// must assume escapes: it decodes into this one value, kept zero
	// between calls, instead of moving each call's arguments to the heap.
	into := new(A)
	decode := func(raw []byte) (A, error) {
		var zero A
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" {
			return zero, nil
		}
		if pl != nil {
			ok := decodeFast(pl, raw, unsafe.Pointer(into))
			args := *into
			*into = zero
			if ok {
				return args, nil
			}
		}
		var args A
		err := json.Unmarshal(raw, &args)
		return args, err
	}
	warm := []byte("{}")
	decode(warm)
	var a A
	json.Unmarshal(warm, &a)
	encPlanFor(reflect.TypeFor[A]()) // tools often return (part of) their arguments
	handlers[tool] = func(raw json.RawMessage) (Result, error) {
		args, err := decode(raw)
		if err != nil {
			return Errorf("invalid arguments for %s: %v", tool, err), nil
		}
		return fn(args)
	}
}

// init runs the paths of a call once, in the module's initialiser: the
// host keeps instances ready that have never served a call, and this way
// they have already paid for the lazy initialisation of the Go runtime's
// allocator, fmt and encoding/json. It holds no request state.
func init() {
	dispatch(nil, []byte(`{"tool":"","arguments":{}}`))
	JSON(map[string]any{"warm": []any{1.5, "up", true, nil}})
}

// Tools lists the registered tools, sorted.
func Tools() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(handlers))
	for name := range handlers {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Dispatch runs one ABI request and returns the ABI result (JSON). The
// exported call function is a thin wrapper around it; tests may use it
// directly. A panicking handler becomes a tool error.
func Dispatch(request []byte) []byte { return dispatch(nil, request) }

// dispatch is Dispatch appending the result to dst.
func dispatch(dst, request []byte) []byte {
	name, args, ok := splitRequest(request)
	if !ok {
		var req abi.Request
		if err := json.Unmarshal(request, &req); err != nil {
			return encode(dst, Errorf("plugin: malformed request: %v", err))
		}
		name, args = []byte(req.Tool), req.Arguments
	}
	mu.Lock()
	h, ok := handlers[string(name)] // no allocation for the lookup
	mu.Unlock()
	if !ok {
		return encode(dst, Errorf("plugin has no tool %q (it has: %v)", name, Tools()))
	}
	// The handler's decoded strings are substrings of this copy, which is
	// never written again (the request buffer is, by the next call).
	res, err := run(h, keepBytes(args))
	if err != nil {
		res = Result{Content: err.Error(), IsError: true}
	}
	return encode(dst, res)
}

func run(h handler, args json.RawMessage) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = Errorf("plugin panicked: %v", p), nil
		}
	}()
	return h(args)
}

// encode writes the ABI result by hand: every pass over the bytes costs in
// WebAssembly, so the content is escaped once and structured JSON that is
// already encoded is copied as it is.
func encode(dst []byte, r Result) []byte {
	var structured []byte
	switch v := r.Structured.(type) {
	case nil:
	case json.RawMessage:
		structured = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return encode(dst, Errorf("cannot encode structured result: %v", err))
		}
		structured = b
	}
	out := append(dst[:0], '{')
	if contentIsStructured(r.Content, structured) {
		// No "content" key: the host reads the structured JSON text as the
		// content, and that is this very text (ABI v1, docs/ABI.md).
		out = append(out, `"structured":`...)
		out = append(out, structured...)
	} else {
		out = append(out, `"content":`...)
		out = appendString(out, r.Content)
		if len(structured) > 0 {
			out = append(out, `,"structured":`...)
			out = append(out, structured...)
		}
	}
	if r.IsError {
		out = append(out, `,"is_error":true`...)
	}
	return append(out, '}')
}

// contentIsStructured reports whether content is the text of structured
// itself, as JSON makes it: the same bytes in memory (comparing the bytes
// would cost a guest loop iteration each).
func contentIsStructured(content string, structured []byte) bool {
	return len(structured) > 0 && len(content) == len(structured) &&
		unsafe.StringData(content) == unsafe.SliceData(structured)
}

// appendString appends s as a JSON string. Runs of bytes that need no
// escape are found eight at a time and copied whole.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start, i := 0, 0
	for i < len(s) {
		for i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if m := escapes(x) & hi8; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ErrNotHosted is returned by capability helpers outside a Toolshed host
// (for instance in a plain go test of the handler functions).
var ErrNotHosted = errors.New("sdk: not running under a Toolshed host")

// call performs a capability operation: req is encoded, the reply's OK part
// decoded into reply (which may be nil).
func call(op string, req, reply any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	raw, err := hostCall(op, b)
	if err != nil {
		return err
	}
	var r abi.Reply
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s: malformed reply from host: %w", op, err)
	}
	if r.Error != "" {
		return errors.New(r.Error)
	}
	if reply != nil && len(r.OK) > 0 {
		if err := json.Unmarshal(r.OK, reply); err != nil {
			return fmt.Errorf("%s: malformed reply from host: %w", op, err)
		}
	}
	return nil
}

// Log writes a line to the host log, tagged with this plugin. Level is
// debug, info, warn or error. It needs the "log" capability; without it
// the line is dropped and the error says so.
func Log(level, format string, args ...any) error {
	return call(abi.OpLog, abi.LogRequest{Level: level, Message: fmt.Sprintf(format, args...)}, nil)
}

// Config returns an operator configuration value the plugin requested in
// its manifest ("config" capability).
func Config(key string) (string, error) {
	var r abi.ConfigReply
	err := call(abi.OpConfigGet, abi.ConfigRequest{Key: key}, &r)
	return r.Value, err
}

// ReadFile reads a file from an operator-named read-only mount ("mounts"
// capability). The path is slash-separated and relative to the mount.
func ReadFile(mount, path string) ([]byte, error) {
	var r abi.FSReadReply
	err := call(abi.OpFSRead, abi.FSRequest{Mount: mount, Path: path}, &r)
	return r.Data, err
}

// ReadDir lists a directory of a mount, sorted by name.
func ReadDir(mount, path string) ([]abi.DirEntry, error) {
	var r abi.FSListReply
	err := call(abi.OpFSList, abi.FSRequest{Mount: mount, Path: path}, &r)
	return r.Entries, err
}

// Fetch makes an outbound HTTP request ("http" capability): only to origins
// the operator allows, with the response body capped.
func Fetch(req abi.HTTPRequest) (*abi.HTTPReply, error) {
	var r abi.HTTPReply
	if err := call(abi.OpHTTP, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// SaveArtifact stores a file for the user (a chart, a report) in the
// operator's artifact directory ("artifacts" capability) and says where.
func SaveArtifact(name, contentType string, data []byte) (*abi.ArtifactReply, error) {
	var r abi.ArtifactReply
	if err := call(abi.OpArtifact, abi.ArtifactRequest{Name: name, ContentType: contentType, Data: data}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Query runs one read-only SQL statement through the host ("sql"
// capability); the plugin never holds a connection or credentials.
func Query(sql string, params ...any) (*abi.SQLReply, error) {
	return QueryWith(abi.SQLRequest{SQL: sql, Params: params})
}

// QueryWith is Query with every field of the request (a row cap).
func QueryWith(req abi.SQLRequest) (*abi.SQLReply, error) {
	var r abi.SQLReply
	if err := call(abi.OpSQL, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func errHostRejected(op string) error {
	return fmt.Errorf("%s: the host rejected the call", op)
}
