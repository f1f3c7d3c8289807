// Package manifest reads and validates plugin manifests: the JSON file
// beside a plugin's .wasm module that names the plugin, pins the module by
// sha256 and describes its tools, the capabilities it requests and the
// limits it asks for. The format is documented in docs/MANIFEST.md.
//
// Decoding is strict: unknown fields, duplicate keys, trailing data and
// values of the wrong type are errors. Every error names the field and the
// reason; LoadFile adds the file. Nothing here reads a .wasm file.
//
// The functions of this package are safe for concurrent use; a Manifest is
// a plain value and not safe for concurrent mutation.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolshed/toolshed/internal/names"
)

// ABIVersion is the plugin ABI this host speaks. A manifest must name it.
const ABIVersion = 1

// Size limits of a manifest and its parts. They bound what one manifest
// costs the host to read, validate and index (docs/MANIFEST.md gives the
// measured cost); the bundled manifests use a small fraction of each (the
// largest: 5 KB, 4 tools, 666-byte schemas nested 8 levels).
const (
	MaxFileBytes        = 256 << 10 // the whole file
	MaxTools            = 64
	MaxDescriptionBytes = 4096
	MaxSchemaBytes      = 16 << 10 // one tool's parameters
	MaxSchemaBytesTotal = 64 << 10 // the parameters of all tools of a manifest
	MaxSchemaDepth      = 16       // JSON nesting inside parameters
	MaxKeywords         = 64
	MaxKeywordBytes     = 128
	MaxExamples         = 32
	MaxExampleBytes     = 512
)

// Limit ranges and defaults (manifest units).
const (
	DefaultTimeoutMS   = 10_000
	MaxTimeoutMS       = 300_000
	DefaultMaxMemoryMB = 64
	MaxMemoryMB        = 4096
	DefaultMaxOutputKB = 1024
	MaxOutputKB        = 16 << 10
)

// Manifest describes one plugin.
type Manifest struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	ABIVersion int    `json:"abi_version,omitempty"`
	// ABI names the plugin ABI when it is not Toolshed's own: "extism"
	// (the extism:host/env ABI, extism.go) in place of abi_version.
	ABI          string       `json:"abi,omitempty"`
	Description  string       `json:"description,omitempty"`
	Wasm         string       `json:"wasm"`
	SHA256       string       `json:"sha256"`
	Capabilities Capabilities `json:"capabilities"`
	Limits       Limits       `json:"limits"`
	Tools        []Tool       `json:"tools"`
	// Snapshot false opts the plugin out of snapshots: every instance is
	// instantiated and initialised from scratch (docs/RUNTIME.md).
	// Absent means true.
	Snapshot *bool `json:"snapshot,omitempty"`
	// Servlet marks an Extism plugin that is an mcp.run servlet: one
	// "call" export serving every tool (extism.go). Only with "abi":
	// "extism".
	Servlet bool `json:"servlet,omitempty"`
}

// Tool is one tool of a plugin.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Keywords    []string        `json:"keywords,omitempty"`
	Examples    []string        `json:"examples,omitempty"`
	// Title, Annotations and OutputSchema are shown to MCP clients, never
	// to the model through the OpenAI function list (meta.go).
	Title        string          `json:"title,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Export and Input are for Extism plugins (extism.go): the export
	// that runs the tool and what it receives.
	Export string `json:"export,omitempty"`
	Input  string `json:"input,omitempty"`
}

// Capabilities are what a plugin asks the host for. The operator's grants
// decide what it gets; the effective set is the intersection.
type Capabilities struct {
	Log    bool     `json:"log,omitempty"`    // write to the host log
	Config []string `json:"config,omitempty"` // operator configuration keys it reads
	Mounts []string `json:"mounts,omitempty"` // operator-named read-only directories
	HTTP   []string `json:"http,omitempty"`   // origins (scheme://host[:port]) it calls; "*" = whatever the operator allows
	SQL    bool     `json:"sql,omitempty"`    // read-only SQL through the host
	// Artifacts lets the plugin store files (charts, reports) in the
	// operator's artifact directory.
	Artifacts bool `json:"artifacts,omitempty"`
	// Client lists what the plugin asks of the MCP client a call comes
	// from: "log", "progress", "sample", "elicit" (client.go).
	Client []string `json:"client,omitempty"`
}

// Limits are what a plugin asks for per call. Zero means the default; the
// operator's caps bound them.
type Limits struct {
	TimeoutMS   int `json:"timeout_ms,omitempty"`
	MaxMemoryMB int `json:"max_memory_mb,omitempty"`
	MaxOutputKB int `json:"max_output_kb,omitempty"`
}

// Timeout is the per-call deadline, with the default applied.
func (l Limits) Timeout() time.Duration {
	if l.TimeoutMS == 0 {
		return DefaultTimeoutMS * time.Millisecond
	}
	return time.Duration(l.TimeoutMS) * time.Millisecond
}

// MemoryBytes is the memory cap, with the default applied.
func (l Limits) MemoryBytes() int64 {
	if l.MaxMemoryMB == 0 {
		return DefaultMaxMemoryMB << 20
	}
	return int64(l.MaxMemoryMB) << 20
}

// OutputBytes is the result-size cap, with the default applied.
func (l Limits) OutputBytes() int64 {
	if l.MaxOutputKB == 0 {
		return DefaultMaxOutputKB << 10
	}
	return int64(l.MaxOutputKB) << 10
}

// FieldError is one problem with a manifest: the file (when known), the
// field as a path ("tools[2].parameters") and the reason.
type FieldError struct {
	File   string
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Errors is the list of problems of one manifest.
type Errors []*FieldError

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// LoadFile reads and validates the manifest at path. Errors name the file.
// Only a regular file is read, and opening never blocks: a named pipe,
// socket, device or directory is refused (ReadRegular).
func LoadFile(path string) (*Manifest, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, Errors{{File: path, Reason: pathErrReason(err)}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, Errors{{File: path, Reason: pathErrReason(err)}}
	}
	m, err := Decode(data)
	if err != nil {
		var es Errors
		if errors.As(err, &es) {
			for _, e := range es {
				e.File = path
			}
			return nil, es
		}
		return nil, Errors{{File: path, Reason: err.Error()}}
	}
	return m, nil
}

// Decode parses and validates a manifest. The error, if any, is an Errors.
func Decode(data []byte) (*Manifest, error) {
	if len(data) > MaxFileBytes {
		return nil, Errors{{Reason: fmt.Sprintf("manifest larger than %d bytes", MaxFileBytes)}}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Errors{{Reason: "empty manifest"}}
	}
	es, fatal := checkStrict(data, manifestShape)
	if fatal {
		return nil, es
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if len(es) == 0 {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&m); err != nil {
		var te *json.UnmarshalTypeError
		if len(es) == 0 || !errors.As(err, &te) {
			return nil, append(es, decodeError(err))
		}
		// A value of the wrong type, reported above: the others were
		// decoded and are validated as well.
	}
	// Every problem at once: the structural ones in file order, then the
	// rules, except those about a field already reported.
	for _, e := range m.Validate() {
		if !coveredBy(e.Field, es) {
			es = append(es, e)
		}
	}
	if len(es) > 0 {
		return nil, es
	}
	return &m, nil
}

// coveredBy reports whether field is, or lies inside, a field of es: a
// value of the wrong type is not also reported as, say, missing.
func coveredBy(field string, es Errors) bool {
	for _, e := range es {
		if e.Field == "" || field == e.Field || strings.HasPrefix(field, e.Field+".") || strings.HasPrefix(field, e.Field+"[") {
			return true
		}
	}
	return false
}

// pathErrReason drops the path an *fs.PathError repeats.
func pathErrReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

func decodeError(err error) *FieldError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &FieldError{Field: te.Field, Reason: fmt.Sprintf("want %s, have JSON %s", te.Type, te.Value)}
	}
	return &FieldError{Reason: err.Error()}
}

var (
	pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	toolNameRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)
	versionRE    = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	sha256RE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	keyRE        = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)
	// hostRE: a DNS name, an IPv4 address or an IPv6 address (as Hostname gives it).
	hostRE = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$`)
)

// ReservedToolNames cannot be used by plugins, nor any name that clashes
// with one (names.Clash): tool_search and the host's always-on tools.
var ReservedToolNames = names.Reserved()

// Validate checks every rule that needs only the manifest itself and
// returns all problems found: plugin fields, limits, capabilities, then
// each tool in order.
func (m *Manifest) Validate() Errors {
	var es Errors
	bad := func(field, format string, args ...any) {
		es = append(es, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if !pluginNameRE.MatchString(m.Name) {
		bad("name", "%q is not a plugin name (lowercase letter, then up to 63 of a-z 0-9 _ -)", m.Name)
	}
	if !versionRE.MatchString(m.Version) {
		bad("version", "%q is not a semantic version (MAJOR.MINOR.PATCH)", m.Version)
	}
	es = append(es, m.checkABI()...)
	if len(m.Description) > MaxDescriptionBytes {
		bad("description", "longer than %d bytes", MaxDescriptionBytes)
	}
	if reason := checkWasmPath(m.Wasm); reason != "" {
		bad("wasm", "%s", reason)
	}
	if !sha256RE.MatchString(m.SHA256) {
		bad("sha256", "want 64 lowercase hex digits, have %q", m.SHA256)
	}
	checkLimit := func(field string, v, max int, unit string) {
		if v < 0 || v > max {
			bad("limits."+field, "%d is out of range (1 to %d %s; 0 or absent for the default)", v, max, unit)
		}
	}
	checkLimit("timeout_ms", m.Limits.TimeoutMS, MaxTimeoutMS, "ms")
	checkLimit("max_memory_mb", m.Limits.MaxMemoryMB, MaxMemoryMB, "MiB")
	checkLimit("max_output_kb", m.Limits.MaxOutputKB, MaxOutputKB, "KiB")
	checkKeys := func(field string, keys []string) {
		seen := map[string]bool{}
		for i, k := range keys {
			f := fmt.Sprintf("capabilities.%s[%d]", field, i)
			if !keyRE.MatchString(k) {
				bad(f, "%q is not a key (lowercase letter, then a-z 0-9 _ . -)", k)
			} else if seen[k] {
				bad(f, "%q is listed twice", k)
			}
			seen[k] = true
		}
	}
	checkKeys("config", m.Capabilities.Config)
	checkKeys("mounts", m.Capabilities.Mounts)
	for i, o := range m.Capabilities.HTTP {
		if reason := checkOrigin(o); reason != "" {
			bad(fmt.Sprintf("capabilities.http[%d]", i), "%s", reason)
		}
	}
	for i, f := range m.Capabilities.Client {
		if reason := checkClientFeature(f, m.Capabilities.Client[:i]); reason != "" {
			bad(fmt.Sprintf("capabilities.client[%d]", i), "%s", reason)
		}
	}

	if len(m.Tools) == 0 {
		bad("tools", "a plugin needs at least one tool")
	}
	if len(m.Tools) > MaxTools {
		bad("tools", "%d tools; at most %d", len(m.Tools), MaxTools)
	}
	reserved := reservedSet()
	var seen names.Set[struct{}]
	schemaBytes := 0
	for i, t := range m.Tools {
		p := fmt.Sprintf("tools[%d]", i)
		if !toolNameRE.MatchString(t.Name) {
			bad(p+".name", "%q is not a tool name (a letter, then up to 63 of A-Z a-z 0-9 _ -)", t.Name)
		} else if other, _, ok := reserved.Find(t.Name); ok {
			bad(p+".name", "%q is reserved by the host%s", t.Name, clashReason(t.Name, other))
		} else if other, _, ok := seen.Find(t.Name); ok {
			bad(p+".name", "%q clashes with tool %q of this manifest%s", t.Name, other, clashReason(t.Name, other))
		} else {
			seen.Add(t.Name, struct{}{})
		}
		switch {
		case strings.TrimSpace(t.Description) == "":
			bad(p+".description", "missing; the model and search need it")
		case len(t.Description) > MaxDescriptionBytes:
			bad(p+".description", "longer than %d bytes", MaxDescriptionBytes)
		}
		if reason := checkSchema(t.Parameters); reason != "" {
			bad(p+".parameters", "%s", reason)
		}
		if schemaBytes += len(t.Parameters); schemaBytes > MaxSchemaBytesTotal && schemaBytes-len(t.Parameters) <= MaxSchemaBytesTotal {
			bad(p+".parameters", "the tools' parameters together are larger than %d bytes", MaxSchemaBytesTotal)
		}
		checkList := func(field string, list []string, maxN, maxBytes int) {
			if len(list) > maxN {
				bad(p+"."+field, "%d entries; at most %d", len(list), maxN)
			}
			for j, s := range list {
				if strings.TrimSpace(s) == "" {
					bad(fmt.Sprintf("%s.%s[%d]", p, field, j), "empty")
				} else if len(s) > maxBytes {
					bad(fmt.Sprintf("%s.%s[%d]", p, field, j), "longer than %d bytes", maxBytes)
				}
			}
		}
		checkList("keywords", t.Keywords, MaxKeywords, MaxKeywordBytes)
		checkList("examples", t.Examples, MaxExamples, MaxExampleBytes)
		es = append(es, checkToolMeta(p, t)...)
		es = append(es, m.checkToolABI(p, t)...)
	}
	return es
}

// reservedSet holds ReservedToolNames.
func reservedSet() *names.Set[struct{}] {
	var s names.Set[struct{}]
	for _, r := range ReservedToolNames {
		s.Add(r, struct{}{})
	}
	return &s
}

func isReserved(name string) bool {
	_, _, ok := reservedSet().Find(name)
	return ok
}

// clashReason says how name meets other: ` (names must differ in more than
// case and _ -)` or ` (it looks like "other")`.
func clashReason(name, other string) string {
	switch {
	case name == other:
		return ""
	case names.Fold(name) == names.Fold(other):
		return fmt.Sprintf(" (it differs from %q only in case and _ -; names must differ in more)", other)
	default:
		return fmt.Sprintf(" (it looks like %q: names must not differ only in look-alike characters such as I/l/1, O/0, rn/m, vv/w, cl/d)", other)
	}
}

// FoldName is the form in which tool names must differ: lowercase, without
// _ - . and spaces. Search uses the same folding for exact-name matches.
func FoldName(s string) string { return names.Fold(s) }

func checkWasmPath(p string) string {
	switch {
	case p == "":
		return "missing; name the module file, relative to the manifest"
	case strings.Contains(p, `\`):
		return fmt.Sprintf("%q: use / as the path separator", p)
	case path.IsAbs(p) || strings.HasPrefix(p, "~"):
		return fmt.Sprintf("%q: must be relative to the manifest's directory", p)
	case path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Sprintf("%q: must be a clean path inside the manifest's directory", p)
	case !strings.HasSuffix(p, ".wasm"):
		return fmt.Sprintf("%q: must end in .wasm", p)
	}
	return ""
}

func checkOrigin(o string) string {
	if o == "*" {
		return ""
	}
	u, err := url.Parse(o)
	if err != nil {
		return fmt.Sprintf("%q is not an origin: %v", o, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || !hostRE.MatchString(u.Hostname()) || u.User != nil ||
		(u.Path != "" && u.Path != "/") || strings.ContainsAny(o, "?#") || strings.HasSuffix(u.Host, ":") {
		return fmt.Sprintf("%q is not an origin (want http[s]://host[:port], or *)", o)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("%q: bad port", o)
		}
	}
	return ""
}

// CompileSchema compiles a tool's parameter schema. No reference outside
// the schema is ever loaded. An empty schema means an object with no
// parameters.
func CompileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // refuse every external reference
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "toolshed:parameters.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

func checkSchema(raw json.RawMessage) string {
	if len(raw) > MaxSchemaBytes {
		return fmt.Sprintf("schema larger than %d bytes", MaxSchemaBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "" // no parameters
	}
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return "must be a JSON Schema object"
	}
	if t, _ := top["type"].(string); t != "object" {
		return `the top level must be {"type": "object", ...}: tool arguments are a JSON object`
	}
	if depth(top) > MaxSchemaDepth {
		return fmt.Sprintf("schema nested deeper than %d levels", MaxSchemaDepth)
	}
	if _, err := CompileSchema(raw); err != nil {
		return "not a valid JSON Schema: " + oneLine(err.Error())
	}
	return ""
}

// depth is the JSON nesting of v: 0 for a scalar, 1 for a flat object.
func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, depth(e))
		}
	case []any:
		for _, e := range v {
			d = max(d, depth(e))
		}
	default:
		return 0
	}
	return d + 1
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	return strings.Join(strings.Fields(s), " ")
}
