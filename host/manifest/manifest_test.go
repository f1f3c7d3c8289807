package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// baseManifest is a small valid manifest with two tools; the table tests
// change one thing in it at a time.
const baseManifest = `{
  "name": "demo",
  "version": "0.1.0",
  "abi_version": 1,
  "wasm": "demo.wasm",
  "sha256": "` + testSHA + `",
  "capabilities": {},
  "limits": {},
  "tools": [
    {"name": "first", "description": "The first tool.",
     "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
    {"name": "second", "description": "The second tool."}
  ]
}`

// completeManifest uses every field of the format.
const completeManifest = `{
  "name": "weather",
  "version": "1.2.3-rc.1+build.5",
  "abi_version": 1,
  "description": "Current weather and forecasts.",
  "wasm": "bin/weather.wasm",
  "sha256": "` + testSHA + `",
  "capabilities": {
    "log": true,
    "config": ["weather.endpoint", "weather.api_key"],
    "mounts": ["maps"],
    "http": ["https://api.example.com", "http://127.0.0.1:8080", "*"],
    "sql": true
  },
  "limits": {"timeout_ms": 2500, "max_memory_mb": 128, "max_output_kb": 256},
  "tools": [
    {
      "name": "getCurrentWeather",
      "description": "Get the current weather for a city.",
      "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "City name"},
        "units": {"type": "string", "enum": ["metric", "imperial"]}
      }, "required": ["location"]},
      "keywords": ["weather", "temperature", "天气"],
      "examples": ["what's the weather in Paris", "北京现在天气怎么样"]
    },
    {
      "name": "get_forecast",
      "description": "Get the forecast for the next days."
    }
  ]
}`

type obj = map[string]any

// edit returns baseManifest with f applied to its decoded form.
func edit(f func(m obj)) []byte {
	var m obj
	if err := json.Unmarshal([]byte(baseManifest), &m); err != nil {
		panic(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func tool(m obj, i int) obj { return m["tools"].([]any)[i].(obj) }

func setTool(i int, key string, v any) []byte {
	return edit(func(m obj) { tool(m, i)[key] = v })
}

func setIn(section, key string, v any) []byte {
	return edit(func(m obj) { m[section].(obj)[key] = v })
}

func set(key string, v any) []byte {
	return edit(func(m obj) { m[key] = v })
}

func repeatList(s string, n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = s
	}
	return l
}

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// fieldErrors asserts that err is a non-empty Errors and returns it.
func fieldErrors(t *testing.T, err error) Errors {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, have nil")
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %T (%v) is not an Errors", err, err)
	}
	if len(es) == 0 {
		t.Fatal("empty Errors")
	}
	for i, e := range es {
		if e == nil || e.Reason == "" {
			t.Fatalf("error %d has no reason: %#v", i, e)
		}
	}
	return es
}

func TestDecodeComplete(t *testing.T) {
	m, err := Decode([]byte(completeManifest))
	if err != nil {
		t.Fatal(err)
	}
	want := Manifest{
		Name:        "weather",
		Version:     "1.2.3-rc.1+build.5",
		ABIVersion:  1,
		Description: "Current weather and forecasts.",
		Wasm:        "bin/weather.wasm",
		SHA256:      testSHA,
		Capabilities: Capabilities{
			Log:    true,
			Config: []string{"weather.endpoint", "weather.api_key"},
			Mounts: []string{"maps"},
			HTTP:   []string{"https://api.example.com", "http://127.0.0.1:8080", "*"},
			SQL:    true,
		},
		Limits: Limits{TimeoutMS: 2500, MaxMemoryMB: 128, MaxOutputKB: 256},
		Tools: []Tool{
			{
				Name:        "getCurrentWeather",
				Description: "Get the current weather for a city.",
				Keywords:    []string{"weather", "temperature", "天气"},
				Examples:    []string{"what's the weather in Paris", "北京现在天气怎么样"},
			},
			{Name: "get_forecast", Description: "Get the forecast for the next days."},
		},
	}
	params := m.Tools[0].Parameters
	got := *m
	got.Tools = append([]Tool(nil), m.Tools...)
	got.Tools[0].Parameters = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, want)
	}
	var schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(params, &schema); err != nil {
		t.Fatalf("parameters %s: %v", params, err)
	}
	if schema.Type != "object" || len(schema.Properties) != 2 || !reflect.DeepEqual(schema.Required, []string{"location"}) {
		t.Errorf("parameters not kept: %s", params)
	}
	if m.Tools[1].Parameters != nil {
		t.Errorf("absent parameters decoded as %q", m.Tools[1].Parameters)
	}
	if _, err := CompileSchema(params); err != nil {
		t.Errorf("CompileSchema: %v", err)
	}
	if got, want := m.Limits.Timeout(), 2500*time.Millisecond; got != want {
		t.Errorf("Timeout() = %v, want %v", got, want)
	}
	if got, want := m.Limits.MemoryBytes(), int64(128<<20); got != want {
		t.Errorf("MemoryBytes() = %d, want %d", got, want)
	}
	if got, want := m.Limits.OutputBytes(), int64(256<<10); got != want {
		t.Errorf("OutputBytes() = %d, want %d", got, want)
	}
	if es := m.Validate(); len(es) != 0 {
		t.Errorf("Validate of a decoded manifest: %v", es)
	}
}

func TestLimitsDefaults(t *testing.T) {
	m, err := Decode([]byte(baseManifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Limits != (Limits{}) {
		t.Fatalf("empty limits decoded as %+v", m.Limits)
	}
	if got := m.Limits.Timeout(); got != 10*time.Second {
		t.Errorf("default Timeout() = %v, want 10s", got)
	}
	if got := m.Limits.MemoryBytes(); got != 64<<20 {
		t.Errorf("default MemoryBytes() = %d, want %d", got, 64<<20)
	}
	if got := m.Limits.OutputBytes(); got != 1<<20 {
		t.Errorf("default OutputBytes() = %d, want %d", got, 1<<20)
	}
	max := Limits{TimeoutMS: MaxTimeoutMS, MaxMemoryMB: MaxMemoryMB, MaxOutputKB: MaxOutputKB}
	if got := max.Timeout(); got != 5*time.Minute {
		t.Errorf("max Timeout() = %v", got)
	}
	if got := max.MemoryBytes(); got != 4<<30 {
		t.Errorf("max MemoryBytes() = %d", got)
	}
	if got := max.OutputBytes(); got != 16<<20 {
		t.Errorf("max OutputBytes() = %d", got)
	}
}

// TestDecodeValid lists inputs at the edges of the rules that must pass.
func TestDecodeValid(t *testing.T) {
	padded := []byte(baseManifest)
	padded = append(padded, strings.Repeat(" ", MaxFileBytes-len(padded))...)
	tests := []struct {
		name string
		in   []byte
	}{
		{"base", []byte(baseManifest)},
		{"complete", []byte(completeManifest)},
		{"exactly MaxFileBytes", padded},
		{"leading and trailing whitespace", []byte("\n\t " + baseManifest + "\n\n")},
		{"64-char plugin name", set("name", "a"+strings.Repeat("b_-9", 15)+"xyz")},
		{"64-char tool name", setTool(0, "name", "T"+strings.Repeat("x", 63))},
		{"version 10.20.30", set("version", "10.20.30")},
		{"version with build", set("version", "1.0.0+20240101")},
		{"wasm in subdirectory", set("wasm", "a/b/c.wasm")},
		{"limits at max", set("limits", obj{"timeout_ms": MaxTimeoutMS, "max_memory_mb": MaxMemoryMB, "max_output_kb": MaxOutputKB})},
		{"limits at 1", set("limits", obj{"timeout_ms": 1, "max_memory_mb": 1, "max_output_kb": 1})},
		{"explicit zero limits", set("limits", obj{"timeout_ms": 0, "max_memory_mb": 0, "max_output_kb": 0})},
		{"limits absent", edit(func(m obj) { delete(m, "limits") })},
		{"capabilities absent", edit(func(m obj) { delete(m, "capabilities") })},
		{"origins", setIn("capabilities", "http", []any{"https://api.example.com", "http://127.0.0.1:8080", "*", "https://api.example.com/", "http://[::1]:9000", "https://example.com:65535"})},
		{"keys", setIn("capabilities", "config", []any{"a", "a.b-c_d", "z9"})},
		{"same key in config and mounts", edit(func(m obj) {
			m["capabilities"] = obj{"config": []any{"data"}, "mounts": []any{"data"}}
		})},
		{"max keywords", setTool(0, "keywords", repeatList(strings.Repeat("k", MaxKeywordBytes), MaxKeywords))},
		{"max examples", setTool(0, "examples", repeatList(strings.Repeat("e", MaxExampleBytes), MaxExamples))},
		{"description at max", setTool(0, "description", strings.Repeat("d", MaxDescriptionBytes))},
		{"names differing after folding", edit(func(m obj) {
			tool(m, 0)["name"] = "getWeather"
			tool(m, 1)["name"] = "getWeathers"
		})},
		{"internal $ref", setTool(0, "parameters", obj{"type": "object", "$defs": obj{"s": obj{"type": "string"}},
			"properties": obj{"a": obj{"$ref": "#/$defs/s"}}})},
		{"nesting within the limit", []byte(strings.Replace(baseManifest, `"q": {"type": "string"}`,
			`"q": {"type": "string", "examples": [`+nested(MaxSchemaDepth-4)+`]}`, 1))},
		{"max schema bytes in each tool, max total", edit(func(m obj) {
			var tools []any
			for i := 0; i < MaxSchemaBytesTotal/MaxSchemaBytes; i++ {
				tools = append(tools, obj{"name": fmt.Sprintf("t%c", 'a'+i), "description": "d",
					"parameters": obj{"type": "object", "description": strings.Repeat("x", MaxSchemaBytes-50)}})
			}
			m["tools"] = tools
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode(tt.in)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if m == nil {
				t.Fatal("nil manifest without an error")
			}
			if es := m.Validate(); len(es) != 0 {
				t.Fatalf("Validate after Decode: %v", es)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tooLarge := []byte(baseManifest)
	tooLarge = append(tooLarge, strings.Repeat(" ", MaxFileBytes+1-len(tooLarge))...)
	manyTools := make([]any, MaxTools+1)
	for i := range manyTools {
		manyTools[i] = obj{"name": fmt.Sprintf("tool%d", i), "description": "d"}
	}

	tests := []struct {
		name   string
		in     []byte
		field  string
		reason string
	}{
		// Reading.
		{"empty", nil, "", "empty manifest"},
		{"only whitespace", []byte(" \n\t\r\n"), "", "empty manifest"},
		{"larger than MaxFileBytes", tooLarge, "", "manifest larger than 262144 bytes"},
		{"unknown top-level field", set("color", "red"), "color", "unknown field"},
		{"field name in other case", set("Name", "demo"), "Name", "unknown field"},
		{"unknown capability", setIn("capabilities", "network", true), "capabilities.network", "unknown field"},
		{"unknown limit", setIn("limits", "cpu_ms", 5), "limits.cpu_ms", "unknown field"},
		{"unknown tool field", setTool(0, "color", "red"), "tools[0].color", "unknown field"},
		{"unknown field in second tool", setTool(1, "params", obj{}), "tools[1].params", "unknown field"},
		{"duplicate top-level key", []byte(strings.Replace(baseManifest, `"version": "0.1.0",`, `"version": "0.1.0", "name": "b",`, 1)), "name", "duplicate key"},
		{"duplicate key spelled with an escape", []byte(strings.Replace(baseManifest, `"version": "0.1.0",`, `"version": "0.1.0", "n\u0061me": "b",`, 1)), "name", "duplicate key"},
		{"duplicate key in a tool", []byte(strings.Replace(baseManifest, `"name": "second",`, `"name": "second", "name": "third",`, 1)),
			"tools[1].name", "duplicate key"},
		{"duplicate key in a schema", []byte(strings.Replace(baseManifest, `{"type": "object",`, `{"type": "object", "type": "object",`, 1)),
			"tools[0].parameters.type", "duplicate key"},
		{"trailing object", []byte(baseManifest + "\n{}"), "", "unexpected data after the manifest object"},
		{"trailing garbage", []byte(baseManifest + " x"), "", "unexpected data after the manifest object"},
		{"trailing brace", []byte(baseManifest + "}"), "", "unexpected data after the manifest object"},
		{"missing colon", []byte("{\n  \"name\": \"x\",\n  \"version\" 1\n}"), "version", "invalid JSON: invalid character '1' after object key (line 3, column 13)"},
		{"missing comma", []byte("{\n  \"name\": \"x\"\n  \"version\": \"1.0.0\"\n}"), "", "invalid JSON: invalid character '\"' after object key:value pair (line 3, column 3)"},
		{"bad literal", []byte(`{"capabilities": {"log": yes}}`), "capabilities.log", "invalid JSON"},
		{"truncated", []byte(`{"name": "x", "tools": [`), "tools", "invalid JSON: unexpected end of JSON (line 1, column 25)"},
		{"truncated object", []byte(`{"name": "x"`), "", "invalid JSON: unexpected end of JSON (line 1, column 13)"},
		{"top-level array", []byte(`[]`), "", "want an object, have an array"},
		{"top-level string", []byte(`"demo"`), "", "want an object, have a string"},
		{"abi_version as string", set("abi_version", "1"), "abi_version", "want an integer, have a string"},
		{"abi_version fractional", set("abi_version", 1.5), "abi_version", "want an integer, have 1.5"},
		{"name as number", set("name", 7), "name", "want a string, have a number"},
		{"log as string", setIn("capabilities", "log", "yes"), "capabilities.log", "want true or false, have a string"},
		{"capabilities as array", set("capabilities", []any{}), "capabilities", "want an object, have an array"},
		{"timeout as string", setIn("limits", "timeout_ms", "10s"), "limits.timeout_ms", "want an integer, have a string"},
		{"timeout overflows int", []byte(strings.Replace(baseManifest, `"limits": {}`, `"limits": {"timeout_ms": 99999999999999999999}`, 1)),
			"limits.timeout_ms", "want an integer, have 99999999999999999999"},
		{"tools as object", set("tools", obj{}), "tools", "want an array, have an object"},
		{"nesting too deep in a schema", []byte(strings.Replace(baseManifest, `"q": {"type": "string"}`,
			`"q": {"type": "string", "examples": [`+nested(80)+`]}`, 1)),
			"tools[0].parameters.properties.q.examples" + strings.Repeat("[0]", 59), "nested deeper than 64 levels"},
		{"nesting too deep in a leaf", set("name", json.RawMessage(nested(1000))), "name", "want a string, have an array"},
		{"100000 open brackets", []byte(strings.Repeat("[", 100000)), "", "want an object, have an array"},
		{"50000 open objects", []byte(strings.Repeat(`{"a":`, 50000)), "a", "unknown field"},
		{"schema nested too deep", []byte(strings.Replace(baseManifest, `"q": {"type": "string"}`,
			`"q": {"type": "string", "examples": [`+nested(MaxSchemaDepth-3)+`]}`, 1)), "tools[0].parameters", "schema nested deeper than 16 levels"},
		{"schemas together too large", edit(func(m obj) {
			var tools []any
			for i := 0; i <= MaxSchemaBytesTotal/MaxSchemaBytes; i++ {
				tools = append(tools, obj{"name": fmt.Sprintf("t%c", 'a'+i), "description": "d",
					"parameters": obj{"type": "object", "description": strings.Repeat("x", MaxSchemaBytes-50)}})
			}
			m["tools"] = tools
		}), "tools[4].parameters", "the tools' parameters together are larger than 65536 bytes"},
		{"deep objects in a schema", setTool(0, "parameters", json.RawMessage(strings.Repeat(`{"a":`, 100)+"1"+strings.Repeat("}", 100))),
			"tools[0].parameters" + strings.Repeat(".a", 62), "nested deeper than 64 levels"},

		// Plugin fields.
		{"name uppercase", set("name", "Demo"), "name", `"Demo" is not a plugin name`},
		{"name starts with digit", set("name", "1demo"), "name", "is not a plugin name"},
		{"name with dot", set("name", "de.mo"), "name", "is not a plugin name"},
		{"name empty", set("name", ""), "name", `"" is not a plugin name`},
		{"name missing", edit(func(m obj) { delete(m, "name") }), "name", "is not a plugin name"},
		{"name 65 chars", set("name", strings.Repeat("a", 65)), "name", "is not a plugin name"},
		{"version two parts", set("version", "1.0"), "version", `"1.0" is not a semantic version`},
		{"version with v", set("version", "v1.0.0"), "version", "is not a semantic version"},
		{"version leading zero", set("version", "1.01.0"), "version", "is not a semantic version"},
		{"version empty", set("version", ""), "version", "is not a semantic version"},
		{"abi_version 2", set("abi_version", 2), "abi_version", "ABI version 2 is not supported (this host speaks 1)"},
		{"abi_version missing", edit(func(m obj) { delete(m, "abi_version") }), "abi_version", "ABI version 0 is not supported"},
		{"description too long", set("description", strings.Repeat("x", MaxDescriptionBytes+1)), "description", "longer than 4096 bytes"},
		{"sha256 uppercase", set("sha256", strings.ToUpper(testSHA)), "sha256", "want 64 lowercase hex digits"},
		{"sha256 short", set("sha256", testSHA[1:]), "sha256", "want 64 lowercase hex digits"},
		{"sha256 not hex", set("sha256", strings.Repeat("g", 64)), "sha256", "want 64 lowercase hex digits"},
		{"sha256 with prefix", set("sha256", "sha256:"+testSHA), "sha256", "want 64 lowercase hex digits"},
		{"wasm missing", set("wasm", ""), "wasm", "missing; name the module file"},
		{"wasm absolute", set("wasm", "/opt/plugins/demo.wasm"), "wasm", "must be relative to the manifest's directory"},
		{"wasm home", set("wasm", "~/demo.wasm"), "wasm", "must be relative"},
		{"wasm parent", set("wasm", "../x.wasm"), "wasm", "must be a clean path inside the manifest's directory"},
		{"wasm dotdot", set("wasm", ".."), "wasm", "must be a clean path"},
		{"wasm unclean", set("wasm", "a/../b.wasm"), "wasm", "must be a clean path"},
		{"wasm dot slash", set("wasm", "./demo.wasm"), "wasm", "must be a clean path"},
		{"wasm double slash", set("wasm", "a//demo.wasm"), "wasm", "must be a clean path"},
		{"wasm backslash", set("wasm", `plugins\demo.wasm`), "wasm", "use / as the path separator"},
		{"wasm wrong extension", set("wasm", "demo.wat"), "wasm", `"demo.wat": must end in .wasm`},
		{"wasm upper extension", set("wasm", "demo.WASM"), "wasm", "must end in .wasm"},

		// Limits.
		{"timeout negative", setIn("limits", "timeout_ms", -1), "limits.timeout_ms", "-1 is out of range (1 to 300000 ms"},
		{"timeout above max", setIn("limits", "timeout_ms", MaxTimeoutMS+1), "limits.timeout_ms", "300001 is out of range"},
		{"memory negative", setIn("limits", "max_memory_mb", -64), "limits.max_memory_mb", "-64 is out of range (1 to 4096 MiB"},
		{"memory above max", setIn("limits", "max_memory_mb", MaxMemoryMB+1), "limits.max_memory_mb", "4097 is out of range"},
		{"output negative", setIn("limits", "max_output_kb", -1), "limits.max_output_kb", "-1 is out of range (1 to 16384 KiB"},
		{"output above max", setIn("limits", "max_output_kb", MaxOutputKB+1), "limits.max_output_kb", "16385 is out of range"},

		// Capabilities.
		{"config key uppercase", setIn("capabilities", "config", []any{"ok", "Api_Key"}), "capabilities.config[1]", `"Api_Key" is not a key`},
		{"config key empty", setIn("capabilities", "config", []any{""}), "capabilities.config[0]", "is not a key"},
		{"config key with slash", setIn("capabilities", "config", []any{"a/b"}), "capabilities.config[0]", "is not a key"},
		{"config key twice", setIn("capabilities", "config", []any{"a", "b", "a"}), "capabilities.config[2]", `"a" is listed twice`},
		{"mount key starts with digit", setIn("capabilities", "mounts", []any{"9data"}), "capabilities.mounts[0]", "is not a key"},
		{"mount key twice", setIn("capabilities", "mounts", []any{"data", "data"}), "capabilities.mounts[1]", "is listed twice"},
		{"origin with path", setIn("capabilities", "http", []any{"https://api.example.com/v1"}), "capabilities.http[0]", "is not an origin (want http[s]://host[:port], or *)"},
		{"origin ftp", setIn("capabilities", "http", []any{"*", "ftp://example.com"}), "capabilities.http[1]", "is not an origin"},
		{"origin user info", setIn("capabilities", "http", []any{"https://user:pw@example.com"}), "capabilities.http[0]", "is not an origin"},
		{"origin bare user", setIn("capabilities", "http", []any{"https://user@example.com"}), "capabilities.http[0]", "is not an origin"},
		{"origin port too big", setIn("capabilities", "http", []any{"https://example.com:99999"}), "capabilities.http[0]", "bad port"},
		{"origin port zero", setIn("capabilities", "http", []any{"https://example.com:0"}), "capabilities.http[0]", "bad port"},
		{"origin port not a number", setIn("capabilities", "http", []any{"https://example.com:http"}), "capabilities.http[0]", "is not an origin"},
		{"origin without scheme", setIn("capabilities", "http", []any{"api.example.com"}), "capabilities.http[0]", "is not an origin"},
		{"origin with query", setIn("capabilities", "http", []any{"https://example.com?a=1"}), "capabilities.http[0]", "is not an origin"},
		{"origin with fragment", setIn("capabilities", "http", []any{"https://example.com#x"}), "capabilities.http[0]", "is not an origin"},
		{"origin no host", setIn("capabilities", "http", []any{"https://"}), "capabilities.http[0]", "is not an origin"},
		{"origin empty", setIn("capabilities", "http", []any{""}), "capabilities.http[0]", "is not an origin"},
		{"origin with space", setIn("capabilities", "http", []any{"https://exa mple.com"}), "capabilities.http[0]", "is not an origin"},

		// Tools.
		{"no tools", set("tools", []any{}), "tools", "a plugin needs at least one tool"},
		{"tools missing", edit(func(m obj) { delete(m, "tools") }), "tools", "a plugin needs at least one tool"},
		{"tools null", set("tools", nil), "tools", "want an array, have null"},
		{"too many tools", set("tools", manyTools), "tools", "65 tools; at most 64"},
		{"tool name starts with digit", setTool(0, "name", "1tool"), "tools[0].name", `"1tool" is not a tool name`},
		{"tool name with space", setTool(1, "name", "my tool"), "tools[1].name", "is not a tool name"},
		{"tool name with dot", setTool(0, "name", "a.b"), "tools[0].name", "is not a tool name"},
		{"tool name empty", setTool(0, "name", ""), "tools[0].name", "is not a tool name"},
		{"tool name 65 chars", setTool(0, "name", strings.Repeat("t", 65)), "tools[0].name", "is not a tool name"},
		{"tool name non-ASCII", setTool(0, "name", "天气"), "tools[0].name", "is not a tool name"},
		{"tool name reserved", setTool(0, "name", "tool_search"), "tools[0].name", `"tool_search" is reserved by the host`},
		{"tool name reserved folded", setTool(1, "name", "Tool-Search"), "tools[1].name", `"Tool-Search" is reserved by the host`},
		{"tool name reserved camel", setTool(0, "name", "toolSearch"), "tools[0].name", "is reserved by the host"},
		{"tool name reserved upper", setTool(0, "name", "TOOL__SEARCH"), "tools[0].name", "is reserved by the host"},
		{"tool names differ in case", setTool(1, "name", "First"), "tools[1].name", `"First" clashes with tool "first" of this manifest`},
		{"tool names differ in _ and -", edit(func(m obj) {
			tool(m, 0)["name"] = "get_weather"
			tool(m, 1)["name"] = "get-weather"
		}), "tools[1].name", `"get-weather" clashes with tool "get_weather"`},
		{"tool names differ in case and _", edit(func(m obj) {
			tool(m, 0)["name"] = "executeSql"
			tool(m, 1)["name"] = "execute_SQL"
		}), "tools[1].name", "clashes with tool"},
		{"tool description empty", setTool(0, "description", ""), "tools[0].description", "missing; the model and search need it"},
		{"tool description blank", setTool(1, "description", " \n\t"), "tools[1].description", "missing"},
		{"tool description missing", edit(func(m obj) { delete(tool(m, 0), "description") }), "tools[0].description", "missing"},
		{"tool description too long", setTool(0, "description", strings.Repeat("x", MaxDescriptionBytes+1)), "tools[0].description", "longer than 4096 bytes"},
		{"parameters string", setTool(0, "parameters", "object"), "tools[0].parameters", "must be a JSON Schema object"},
		{"parameters array", setTool(0, "parameters", []any{}), "tools[0].parameters", "must be a JSON Schema object"},
		{"parameters true", setTool(0, "parameters", true), "tools[0].parameters", "must be a JSON Schema object"},
		{"parameters null", setTool(0, "parameters", nil), "tools[0].parameters", `the top level must be {"type": "object", ...}`},
		{"parameters empty object", setTool(0, "parameters", obj{}), "tools[0].parameters", "the top level must be"},
		{"parameters type array", setTool(0, "parameters", obj{"type": "array"}), "tools[0].parameters", "the top level must be"},
		{"parameters type list", setTool(0, "parameters", obj{"type": []any{"object"}}), "tools[0].parameters", "the top level must be"},
		{"parameters misspelled type", setTool(0, "parameters", json.RawMessage(`{"type":"object","properties":{"a":{"type":"strnig"}}}`)),
			"tools[0].parameters", "not a valid JSON Schema:"},
		{"parameters bad pattern", setTool(0, "parameters", json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`)),
			"tools[0].parameters", "not a valid JSON Schema:"},
		{"parameters bad minimum", setTool(0, "parameters", json.RawMessage(`{"type":"object","properties":{"a":{"minimum":"1"}}}`)),
			"tools[0].parameters", "not a valid JSON Schema:"},
		{"parameters dangling $ref", setTool(0, "parameters", json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`)),
			"tools[0].parameters", "not a valid JSON Schema:"},
		{"parameters file $ref", setTool(0, "parameters", json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)),
			"tools[0].parameters", "not a valid JSON Schema:"},
		{"parameters too large", setTool(0, "parameters", obj{"type": "object", "description": strings.Repeat("x", MaxSchemaBytes)}),
			"tools[0].parameters", "schema larger than 16384 bytes"},
		{"too many keywords", setTool(0, "keywords", repeatList("k", MaxKeywords+1)), "tools[0].keywords", "65 entries; at most 64"},
		{"empty keyword", setTool(0, "keywords", []any{"ok", ""}), "tools[0].keywords[1]", "empty"},
		{"blank keyword", setTool(1, "keywords", []any{"  "}), "tools[1].keywords[0]", "empty"},
		{"keyword too long", setTool(0, "keywords", []any{strings.Repeat("k", MaxKeywordBytes+1)}), "tools[0].keywords[0]", "longer than 128 bytes"},
		{"keyword too long in bytes", setTool(0, "keywords", []any{strings.Repeat("天", 43)}), "tools[0].keywords[0]", "longer than 128 bytes"},
		{"too many examples", setTool(0, "examples", repeatList("e", MaxExamples+1)), "tools[0].examples", "33 entries; at most 32"},
		{"empty example", setTool(1, "examples", []any{"", "ok"}), "tools[1].examples[0]", "empty"},
		{"example too long", setTool(0, "examples", []any{"ok", strings.Repeat("e", MaxExampleBytes+1)}), "tools[0].examples[1]", "longer than 512 bytes"},
	}
	thenErrors := map[string]string{
		"100000 open brackets": "exceeded max depth",
		"50000 open objects":   "exceeded max depth",
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		if seen[tt.name] {
			t.Fatalf("duplicate case name %q", tt.name)
		}
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode(tt.in)
			if m != nil {
				t.Errorf("manifest returned with an error: %+v", m)
			}
			es := fieldErrors(t, err)
			if then := thenErrors[tt.name]; then != "" {
				// The first error does not end the walk; the second does.
				if len(es) != 2 || !strings.Contains(es[1].Reason, then) {
					t.Fatalf("want a second error ...%s..., have %d:\n%v", then, len(es), err)
				}
			} else if len(es) != 1 {
				t.Fatalf("want 1 error, have %d:\n%v", len(es), err)
			}
			e := es[0]
			if e.Field != tt.field {
				t.Errorf("Field = %q, want %q (reason %q)", e.Field, tt.field, e.Reason)
			}
			if !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("Reason = %q, want it to contain %q", e.Reason, tt.reason)
			}
			if e.File != "" {
				t.Errorf("Decode set File = %q", e.File)
			}
		})
	}
}

// TestExternalRefNoNetwork checks that a schema referring to a reachable
// URL is rejected without the URL being fetched.
func TestExternalRefNoNetwork(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/schema+json")
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()

	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"$ref":"http://example.com/x.json"}}}`,
		`{"type":"object","$ref":"http://example.com/x.json"}`,
		`{"type":"object","properties":{"a":{"$ref":"` + srv.URL + `/x.json"}}}`,
		`{"type":"object","$schema":"` + srv.URL + `/meta.json"}`,
		`{"type":"object","properties":{"a":{"$dynamicRef":"` + srv.URL + `/d.json"}}}`,
	} {
		_, err := Decode(setTool(0, "parameters", json.RawMessage(schema)))
		es := fieldErrors(t, err)
		if len(es) != 1 || es[0].Field != "tools[0].parameters" || !strings.Contains(es[0].Reason, "not a valid JSON Schema") {
			t.Errorf("schema %s: have %v", schema, err)
		}
		if _, err := CompileSchema(json.RawMessage(schema)); err == nil {
			t.Errorf("CompileSchema(%s) succeeded", schema)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schema server was asked %d times", n)
	}
}

func TestCompileSchemaEmpty(t *testing.T) {
	for _, raw := range []json.RawMessage{nil, json.RawMessage(""), json.RawMessage(" \n")} {
		s, err := CompileSchema(raw)
		if err != nil || s == nil {
			t.Errorf("CompileSchema(%q) = %v, %v", raw, s, err)
			continue
		}
		if err := s.Validate(map[string]any{}); err != nil {
			t.Errorf("empty schema rejects {}: %v", err)
		}
		if err := s.Validate("x"); err == nil {
			t.Errorf("empty schema accepts a string")
		}
	}
}

// TestValidateAllProblems checks that Validate reports every problem, in
// order, rather than stopping at the first.
func TestValidateAllProblems(t *testing.T) {
	in := edit(func(m obj) {
		m["name"] = "Bad Name"
		m["sha256"] = "abc"
		tool(m, 1)["keywords"] = []any{"ok", ""}
	})
	_, err := Decode(in)
	es := fieldErrors(t, err)
	want := []struct{ field, reason string }{
		{"name", "is not a plugin name"},
		{"sha256", "want 64 lowercase hex digits"},
		{"tools[1].keywords[1]", "empty"},
	}
	if len(es) != len(want) {
		t.Fatalf("want %d errors, have %d:\n%v", len(want), len(es), err)
	}
	for i, w := range want {
		if es[i].Field != w.field || !strings.Contains(es[i].Reason, w.reason) {
			t.Errorf("error %d = %q: %q, want %q: ...%s...", i, es[i].Field, es[i].Reason, w.field, w.reason)
		}
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[1], "sha256: ") {
		t.Errorf("Error() = %q, want one line per problem", err.Error())
	}

	// A manifest built in Go, with every rule broken at once.
	m := &Manifest{
		Name: "x", Version: "1", ABIVersion: 3, Wasm: "/x.wasm", SHA256: "",
		Limits: Limits{TimeoutMS: -1, MaxMemoryMB: -1, MaxOutputKB: -1},
		Capabilities: Capabilities{
			Config: []string{"A"},
			Mounts: []string{"m", "m"},
			HTTP:   []string{"ftp://x"},
		},
		Tools: []Tool{
			{Name: "a", Description: "d"},
			{Name: "A", Description: "", Parameters: json.RawMessage(`[]`), Keywords: []string{""}, Examples: []string{" "}},
		},
	}
	fields := []string{}
	for _, e := range m.Validate() {
		fields = append(fields, e.Field)
	}
	wantFields := []string{
		"version", "abi_version", "wasm", "sha256",
		"limits.timeout_ms", "limits.max_memory_mb", "limits.max_output_kb",
		"capabilities.config[0]", "capabilities.mounts[1]", "capabilities.http[0]",
		"tools[1].name", "tools[1].description", "tools[1].parameters",
		"tools[1].keywords[0]", "tools[1].examples[0]",
	}
	if !reflect.DeepEqual(fields, wantFields) {
		t.Errorf("Validate fields\n%q\nwant\n%q", fields, wantFields)
	}
	if es := (&Manifest{}).Validate(); len(es) != 6 {
		t.Errorf("zero Manifest: want 6 errors (name, version, abi_version, wasm, sha256, tools), have %d:\n%v", len(es), es)
	}
}

func TestFieldErrorMessage(t *testing.T) {
	tests := []struct {
		e    FieldError
		want string
	}{
		{FieldError{Reason: "empty manifest"}, "empty manifest"},
		{FieldError{Field: "tools[2].parameters", Reason: "bad"}, "tools[2].parameters: bad"},
		{FieldError{File: "a/b.json", Field: "name", Reason: "bad"}, "a/b.json: name: bad"},
		{FieldError{File: "a/b.json", Reason: "bad"}, "a/b.json: bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
	es := Errors{{Field: "a", Reason: "x"}, {Field: "b", Reason: "y"}}
	if got := es.Error(); got != "a: x\nb: y" {
		t.Errorf("Errors.Error() = %q", got)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("valid", func(t *testing.T) {
		m, err := LoadFile(write("ok.json", []byte(completeManifest)))
		if err != nil {
			t.Fatal(err)
		}
		if m.Name != "weather" || len(m.Tools) != 2 {
			t.Errorf("loaded %+v", m)
		}
	})

	t.Run("invalid names the file in every error", func(t *testing.T) {
		p := write("bad.json", edit(func(m obj) {
			m["version"] = "one"
			tool(m, 0)["name"] = "tool_search"
		}))
		m, err := LoadFile(p)
		if m != nil {
			t.Errorf("manifest returned with an error")
		}
		es := fieldErrors(t, err)
		if len(es) != 2 {
			t.Fatalf("want 2 errors, have %v", err)
		}
		for _, e := range es {
			if e.File != p {
				t.Errorf("File = %q, want %q", e.File, p)
			}
			if !strings.HasPrefix(e.Error(), p+": ") {
				t.Errorf("message %q does not start with the path", e.Error())
			}
		}
		if es[0].Field != "version" || es[1].Field != "tools[0].name" {
			t.Errorf("fields %q, %q", es[0].Field, es[1].Field)
		}
	})

	t.Run("syntax error names the file", func(t *testing.T) {
		p := write("syntax.json", []byte("{\n\"name\": \"x\",,\n}"))
		_, err := LoadFile(p)
		es := fieldErrors(t, err)
		if len(es) != 1 || es[0].File != p || !strings.Contains(es[0].Reason, "invalid JSON") || !strings.Contains(es[0].Reason, "line 2") {
			t.Errorf("have %#v", es[0])
		}
	})

	t.Run("too large", func(t *testing.T) {
		data := []byte(baseManifest)
		data = append(data, strings.Repeat(" ", 2*MaxFileBytes)...)
		p := write("large.json", data)
		_, err := LoadFile(p)
		es := fieldErrors(t, err)
		if len(es) != 1 || es[0].File != p || !strings.Contains(es[0].Reason, "manifest larger than") {
			t.Errorf("have %v", err)
		}
	})

	t.Run("empty file", func(t *testing.T) {
		p := write("empty.json", nil)
		_, err := LoadFile(p)
		es := fieldErrors(t, err)
		if len(es) != 1 || es[0].File != p || es[0].Reason != "empty manifest" {
			t.Errorf("have %v", err)
		}
	})

	t.Run("missing", func(t *testing.T) {
		p := filepath.Join(dir, "nope", "missing.json")
		m, err := LoadFile(p)
		if m != nil {
			t.Error("manifest returned for a missing file")
		}
		es := fieldErrors(t, err)
		if len(es) != 1 || es[0].File != p {
			t.Fatalf("have %#v", err)
		}
		if !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("message %q does not start with the path", err.Error())
		}
		if !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no such file") {
			t.Errorf("message %q does not say the file is missing", err.Error())
		}
	})

	t.Run("directory", func(t *testing.T) {
		_, err := LoadFile(dir)
		es := fieldErrors(t, err)
		if len(es) != 1 || es[0].File != dir {
			t.Errorf("have %v", err)
		}
	})
}

// TestRepositoryManifests loads the real manifests of the repository.
func TestRepositoryManifests(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "plugin-manifests", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skip("no plugin-manifests/*.json in this checkout")
	}
	for _, p := range paths {
		if filepath.Base(p) == "_grants.json" { // the folder's grants (catalog.GrantsFile), not a manifest
			continue
		}
		m, err := LoadFile(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(p), ".json"); m.Name != want {
			t.Errorf("%s: name %q", p, m.Name)
		}
		for i, tl := range m.Tools {
			if _, err := CompileSchema(tl.Parameters); err != nil {
				t.Errorf("%s: tools[%d]: %v", p, i, err)
			}
		}
	}
}

func TestFoldNameAndReserved(t *testing.T) {
	for _, s := range []string{"tool_search", "Tool-Search", "toolSearch", "TOOLSEARCH", "tool.search", " tool search "} {
		if FoldName(s) != "toolsearch" {
			t.Errorf("FoldName(%q) = %q", s, FoldName(s))
		}
		if !isReserved(s) {
			t.Errorf("%q is not reserved", s)
		}
	}
	if isReserved("tool_searches") {
		t.Error("tool_searches is reserved")
	}
}

func TestDecodeConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if _, err := Decode([]byte(completeManifest)); err != nil {
					t.Error(err)
					return
				}
				if _, err := Decode(set("name", "X")); err == nil {
					t.Error("no error")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Bugs found while writing these tests; each test states the right
// behaviour and is skipped until the code is fixed.

func TestBugTypeErrorFieldLacksIndex(t *testing.T) {
	for _, tt := range []struct {
		in    []byte
		field string
	}{
		{setTool(1, "name", 7), "tools[1].name"},
		{setTool(0, "keywords", "weather"), "tools[0].keywords"},
		{setTool(1, "examples", []any{"ok", 3}), "tools[1].examples[1]"},
	} {
		_, err := Decode(tt.in)
		es := fieldErrors(t, err)
		if es[0].Field != tt.field {
			t.Errorf("Field = %q, want %q", es[0].Field, tt.field)
		}
	}
}

func TestBugSyntaxErrorPositionInsideValue(t *testing.T) {
	in := "{" + strings.Repeat("\n", 20) + "\"name\": \"a\x01\"}"
	_, err := Decode([]byte(in))
	es := fieldErrors(t, err)
	if es[0].Field != "name" || !strings.Contains(es[0].Reason, "(line 21, column 11)") {
		t.Errorf("have %q: %q, want the error at line 21, column 11", es[0].Field, es[0].Reason)
	}
}

func TestBugOriginWithoutHost(t *testing.T) {
	for _, o := range []string{"https://:443", "http://:8080", "https://*.example.com"} {
		_, err := Decode(setIn("capabilities", "http", []any{o}))
		if err == nil {
			t.Errorf("origin %q accepted", o)
			continue
		}
		es := fieldErrors(t, err)
		if es[0].Field != "capabilities.http[0]" {
			t.Errorf("%q: Field = %q", o, es[0].Field)
		}
	}
}

func ExampleDecode() {
	m, err := Decode([]byte(`{
  "name": "weather",
  "version": "0.1.0",
  "abi_version": 1,
  "wasm": "weather.wasm",
  "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
  "capabilities": {"http": ["https://api.example.com"]},
  "tools": [
    {"name": "getCurrentWeather", "description": "Current weather for a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    {"name": "getWeatherForecast", "description": "Forecast for the next days."}
  ]
}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Name, m.Version)
	for _, t := range m.Tools {
		fmt.Println("-", t.Name)
	}
	fmt.Println("timeout:", m.Limits.Timeout())
	// Output:
	// weather 0.1.0
	// - getCurrentWeather
	// - getWeatherForecast
	// timeout: 10s
}

func ExampleDecode_invalid() {
	_, err := Decode([]byte(`{
  "name": "weather",
  "version": "0.1",
  "abi_version": 1,
  "wasm": "../weather.wasm",
  "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
  "tools": [{"name": "tool_search", "description": "Search."}]
}`))
	fmt.Println(err)
	// Output:
	// version: "0.1" is not a semantic version (MAJOR.MINOR.PATCH)
	// wasm: "../weather.wasm": must be a clean path inside the manifest's directory
	// tools[0].name: "tool_search" is reserved by the host
}

func ExampleDecode_unknownField() {
	_, err := Decode([]byte(`{"name": "weather", "colour": "blue", "version": 1, "abi_version": 1,
  "wasm": "weather.wasm", "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
  "tools": [{"name": "forecast", "description": "Forecast.", "keywords": "rain"}]}`))
	fmt.Println(err)
	// Output:
	// colour: unknown field (line 1, column 29)
	// version: want a string, have a number (line 1, column 51)
	// tools[0].keywords: want an array, have a string (line 3, column 80)
}

// TestDecodeEveryProblem checks that one unknown field hides nothing: a
// manifest with ten problems of every kind gets ten errors, the structural
// ones in file order, then the rules', and none twice.
func TestDecodeEveryProblem(t *testing.T) {
	in := []byte(`{
  "name": "Bad Name",
  "colour": "blue",
  "version": "1.0",
  "abi_version": "1",
  "wasm": "../x.wasm",
  "sha256": "abc",
  "capabilities": {"network": true, "log": "yes"},
  "limits": {"timeout_ms": -1},
  "tools": [
    {"name": "first", "description": "The first tool.", "params": {}},
    {"name": "first", "description": "", "description": "x", "keywords": "k"}
  ]
}`)
	_, err := Decode(in)
	es := fieldErrors(t, err)
	want := []string{
		"colour: unknown field (line 3",
		"abi_version: want an integer, have a string (line 5",
		"capabilities.network: unknown field (line 8",
		"capabilities.log: want true or false, have a string (line 8",
		"tools[0].params: unknown field (line 11",
		"tools[1].description: duplicate key (line 12",
		"tools[1].keywords: want an array, have a string (line 12",
		`name: "Bad Name" is not a plugin name`,
		`version: "1.0" is not a semantic version`,
		`wasm: "../x.wasm": must be a clean path`,
		"sha256: want 64 lowercase hex digits",
		"limits.timeout_ms: -1 is out of range",
		`tools[1].name: "first" clashes with tool "first"`,
	}
	if len(es) != len(want) {
		t.Fatalf("want %d errors, have %d:\n%v", len(want), len(es), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(es[i].Error(), w) {
			t.Errorf("error %d = %q, want %q...", i, es[i].Error(), w)
		}
	}
}
