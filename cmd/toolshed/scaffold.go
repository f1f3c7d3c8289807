package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/sdk"
)

// pluginsNew writes a plugin folder that builds, pins, validates and passes
// its own test as it is: "toolshed plugins new demo && cd demo && make test".
func pluginsNew(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins new", stderr)
	lang := fs.String("lang", "go", "the plugin's language: go or c")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed plugins new [--lang go|c] NAME\n\n"+
			"Writes the folder NAME: a plugin with one tool, its manifest, a test and a Makefile\n"+
			"(make: build and pin; make validate; make test). NAME is the plugin's name. A Go\n"+
			"plugin gets the Go SDK's source (toolshed-sdk/, from this binary): it builds\n"+
			"anywhere, moved or copied, with the Go toolchain alone.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	name := pos[0]
	if es := (&manifest.Manifest{Name: name}).Validate(); len(es) > 0 && es[0].Field == "name" {
		return fmt.Errorf("%q cannot name a plugin: %s", name, es[0].Reason)
	}
	if _, err := os.Lstat(name); err == nil {
		return fmt.Errorf("%s already exists; give a new folder name", name)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	d := scaffoldData{Name: name, Tool: strings.ReplaceAll(name, "-", "_") + "_greet", Toolshed: exe, Version: version}
	var files map[string]string
	switch *lang {
	case "go":
		files = goScaffold
	case "c":
		files = cScaffold
	default:
		return fmt.Errorf("--lang %q: want go or c", *lang)
	}
	if err := os.Mkdir(name, 0o755); err != nil {
		return err
	}
	for path, text := range files {
		var b bytes.Buffer
		tpl := template.Must(template.New(path).Delims("<<", ">>").Parse(text))
		if err := tpl.Execute(&b, d); err != nil {
			return err
		}
		path = strings.ReplaceAll(path, "NAME", name)
		if err := os.WriteFile(filepath.Join(name, path), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if *lang == "c" {
		if err := writeCSDK(name); err != nil {
			return err
		}
	}
	if *lang == "go" {
		if err := writeGoSDK(name, version); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s: a %s plugin with the tool %s\n  cd %s && make test   # build, pin, validate, test\n", name, *lang, d.Tool, name)
	return nil
}

type scaffoldData struct {
	Name, Tool string
	Toolshed   string // this binary
	Version    string // this binary's version
}

// sdkDir is the folder of a new Go plugin that holds the Go SDK's source:
// a module of its own (github.com/toolshed/toolshed, the packages sdk and
// sdk/abi, which need only the standard library), which the plugin's
// go.mod replaces the module with. A relative path: the plugin folder
// builds wherever it is moved, without a checkout or the network.
const sdkDir = "toolshed-sdk"

// writeGoSDK writes the Go SDK this binary was built with (sdk.Source)
// into dir/toolshed-sdk.
func writeGoSDK(dir, version string) error {
	root := filepath.Join(dir, sdkDir)
	files := map[string][]byte{
		"go.mod": []byte("// The Toolshed Go SDK (packages sdk and sdk/abi) of toolshed " + version + ",\n" +
			"// written by \"toolshed plugins new\"; the plugin's go.mod points here.\n" +
			"module github.com/toolshed/toolshed\n\ngo 1.26\n"),
	}
	err := fs.WalkDir(sdk.Source, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := fs.ReadFile(sdk.Source, p)
		files[path.Join("sdk", p)] = b
		return err
	})
	if err != nil {
		return fmt.Errorf("the Go SDK's source: %w", err)
	}
	for p, b := range files {
		f := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// goScaffold is a Go plugin: paths (NAME is the plugin's name) → templates.
var goScaffold = map[string]string{
	"go.mod": `module example.com/<<.Name>>

go 1.26

require github.com/toolshed/toolshed v0.0.0

// The Go SDK's source, written beside this file by the toolshed binary
// that made the folder (<<.Version>>).
replace github.com/toolshed/toolshed => ./toolshed-sdk
`,
	"main.go": `// Command <<.Name>> is a Toolshed plugin: built with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared into <<.Name>>.wasm, described by <<.Name>>.json.
package main

import (
	"strings"

	"github.com/toolshed/toolshed/sdk"
)

// greetArgs are the tool's arguments, decoded from the JSON the model sent
// (the host has already checked them against the manifest's schema).
type greetArgs struct {
	Name string ` + "`json:\"name\"`" + `
}

func init() {
	sdk.Handle("<<.Tool>>", func(a greetArgs) (sdk.Result, error) {
		if strings.TrimSpace(a.Name) == "" {
			// A tool error: the model reads it and can try again.
			return sdk.Errorf("name is empty; give the name to greet"), nil
		}
		return sdk.Text("Hello, %s!", a.Name), nil
	})
}

func main() {}
`,
	"main_test.go": `package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/sdk"
	"github.com/toolshed/toolshed/sdk/abi"
)

// call runs the tool as the host does, through the SDK's dispatcher, in
// this process (no WebAssembly): quick, the place for the plugin's cases.
func call(t *testing.T, args string) abi.Result {
	t.Helper()
	var res abi.Result
	raw := sdk.Dispatch([]byte(` + "`" + `{"tool":"<<.Tool>>","arguments":` + "`" + ` + args + "}"))
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if res.Content == "" && res.Structured != nil {
		res.Content = string(res.Structured)
	}
	return res
}

func TestGreet(t *testing.T) {
	if res := call(t, ` + "`" + `{"name": "Ada"}` + "`" + `); res.IsError || res.Content != "Hello, Ada!" {
		t.Fatalf("greet: %+v", res)
	}
	if res := call(t, ` + "`" + `{"name": " "}` + "`" + `); !res.IsError {
		t.Fatalf("an empty name: %+v", res)
	}
	if res := call(t, ` + "`" + `{}` + "`" + `); !res.IsError {
		t.Fatalf("no name: %+v", res)
	}
}

// TestGreetHosted calls the built module (<<.Name>>.wasm) through the real
// host: the manifest's sha256 and schema checked, the module compiled and
// called through the ABI. "make test" builds it and sets TOOLSHED.
func TestGreetHosted(t *testing.T) {
	toolshed := os.Getenv("TOOLSHED")
	if toolshed == "" {
		t.Skip("TOOLSHED is not set: run make test")
	}
	out, err := exec.Command(toolshed, "call", "--plugins", ".", "<<.Tool>>", ` + "`" + `{"name": "Ada"}` + "`" + `).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "Hello, Ada!" {
		t.Fatalf("toolshed call: %v\n%s", err, out)
	}
	// The schema is the host's to enforce: no name is refused before the
	// module runs.
	if out, err := exec.Command(toolshed, "call", "--plugins", ".", "<<.Tool>>", "{}").CombinedOutput(); err == nil {
		t.Fatalf("no name was accepted:\n%s", out)
	}
}
`,
	"NAME.json": manifestTemplate,
	"Makefile": `# make: build <<.Name>>.wasm and pin its sha256 into <<.Name>>.json
# make validate: check the folder with serve's rules
# make test: the above, then the plugin's own tests, in Go and under the
# real host
# TOOLSHED: the binary that wrote this folder while it is where it was,
# else the toolshed on PATH. AGAINST: the plugin folder this plugin will
# join, whose tool names it must not clash with (default: the bundled
# catalog).
TOOLSHED ?= $(or $(wildcard <<.Toolshed>>),toolshed)
GO       ?= go
AGAINST  ?= bundled
export TOOLSHED

all: <<.Name>>.wasm

<<.Name>>.wasm: $(wildcard *.go) go.mod
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildvcs=false -buildmode=c-shared -o $@ .
	$(TOOLSHED) plugins pin <<.Name>>.json

validate: <<.Name>>.wasm
	$(TOOLSHED) plugins validate --compile --against $(AGAINST) .

test: validate
	$(GO) test ./...
	$(TOOLSHED) call --plugins . <<.Tool>> '{"name": "Toolshed"}'

clean:
	rm -f <<.Name>>.wasm

.PHONY: all validate test clean
`,
}

// manifestTemplate is the scaffold's manifest (docs/MANIFEST.md). The
// sha256 is pinned by "make".
const manifestTemplate = `{
  "name": "<<.Name>>",
  "version": "0.1.0",
  "abi_version": 1,
  "description": "What the <<.Name>> plugin's tools are for.",
  "wasm": "<<.Name>>.wasm",
  "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
  "tools": [
    {
      "name": "<<.Tool>>",
      "description": "Greets someone by name. Say what the tool does, when to use it and what it returns: the model and tool_search read this.",
      "parameters": {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "who to greet"}},
        "required": ["name"],
        "additionalProperties": false
      },
      "keywords": ["hello", "greeting"],
      "examples": ["say hello to Ada"]
    }
  ]
}
`
