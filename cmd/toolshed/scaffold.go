package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/toolshed/toolshed/host/manifest"
)

// pluginsNew writes a plugin folder that builds, pins, validates and passes
// its own test as it is: "toolshed plugins new demo && cd demo && make test".
func pluginsNew(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins new", stderr)
	lang := fs.String("lang", "go", "the plugin's language: go or c")
	sdkDir := fs.String("sdk", "", "a checkout of github.com/toolshed/toolshed whose SDK a Go plugin builds against (default: the one the bundled catalog is in)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed plugins new [--lang go|c] [--sdk DIR] NAME\n\n"+
			"Writes the folder NAME: a plugin with one tool, its manifest, a test and a Makefile\n"+
			"(make: build and pin; make validate; make test). NAME is the plugin's name.")
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
	d := scaffoldData{Name: name, Tool: strings.ReplaceAll(name, "-", "_") + "_greet", Toolshed: exe}
	var files map[string]string
	switch *lang {
	case "go":
		if d.SDK, err = findSDK(*sdkDir); err != nil {
			return err
		}
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
		// go.sum: the checkout's hashes cover every module the SDK needs,
		// so "go mod tidy" below works from the module cache alone.
		if sum, err := os.ReadFile(filepath.Join(d.SDK, "go.sum")); err == nil {
			os.WriteFile(filepath.Join(name, "go.sum"), sum, 0o644)
		}
		tidy := exec.Command("go", "mod", "tidy")
		tidy.Dir = name
		if out, err := tidy.CombinedOutput(); err != nil {
			return fmt.Errorf("%s written, but \"go mod tidy\" failed there (run it again with the Go module proxy reachable): %v\n%s", name, err, out)
		}
	}
	fmt.Fprintf(stdout, "%s: a %s plugin with the tool %s\n  cd %s && make test   # build, pin, validate, test\n", name, *lang, d.Tool, name)
	return nil
}

type scaffoldData struct {
	Name, Tool string
	SDK        string // a checkout of the module (Go)
	Toolshed   string // this binary
}

// sdkModule is the first line of the module's go.mod.
const sdkModule = "module github.com/toolshed/toolshed"

// findSDK returns the checkout a Go plugin builds against: dir if given,
// else the folder holding the bundled catalog, when it is the module.
func findSDK(dir string) (string, error) {
	tried := []string{dir}
	if dir == "" {
		tried = nil
		for _, c := range catalogCandidates() {
			if r, err := filepath.EvalSymlinks(c); err == nil {
				c = r // the folder the catalog really is in
			}
			tried = append(tried, filepath.Dir(c))
		}
	}
	for _, d := range tried {
		f, err := os.Open(filepath.Join(d, "go.mod"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		ok := sc.Scan() && strings.TrimSpace(sc.Text()) == sdkModule
		f.Close()
		if ok {
			return filepath.Abs(d)
		}
	}
	if dir != "" {
		return "", fmt.Errorf("--sdk %s: no go.mod of github.com/toolshed/toolshed there", dir)
	}
	return "", errors.New("the Toolshed SDK was not found (a checkout of github.com/toolshed/toolshed) in any of " +
		strings.Join(tried, ", ") + "; give --sdk DIR")
}

// goScaffold is a Go plugin: paths (NAME is the plugin's name) → templates.
var goScaffold = map[string]string{
	"go.mod": `module example.com/<<.Name>>

go 1.26

require github.com/toolshed/toolshed v0.0.0

// The SDK is not published as a module yet: build against a checkout.
replace github.com/toolshed/toolshed => <<.SDK>>
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
	"testing"

	"github.com/toolshed/toolshed/sdk/plugintest"
)

// The plugin runs under the real host: built to WebAssembly, pinned,
// compiled and called through the ABI, its arguments checked against the
// manifest's schema.
func TestGreet(t *testing.T) {
	p := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "<<.Name>>.json"})
	if res := p.Call("<<.Tool>>", map[string]any{"name": "Ada"}); res.IsError || res.Content != "Hello, Ada!" {
		t.Fatalf("greet: %+v", res)
	}
	if res := p.Call("<<.Tool>>", map[string]any{"name": " "}); !res.IsError {
		t.Fatalf("an empty name: %+v", res)
	}
	if res := p.Call("<<.Tool>>", map[string]any{}); !res.IsError {
		t.Fatalf("no name: %+v", res)
	}
}
`,
	"NAME.json": manifestTemplate,
	"Makefile": `# make: build <<.Name>>.wasm and pin its sha256 into <<.Name>>.json
# make validate: check the folder with serve's rules
# make test: the above, then the plugin's own test under the real host
TOOLSHED ?= <<.Toolshed>>
GO       ?= go

all: <<.Name>>.wasm

<<.Name>>.wasm: $(wildcard *.go) go.mod
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildvcs=false -buildmode=c-shared -o $@ .
	$(TOOLSHED) plugins pin <<.Name>>.json

validate: <<.Name>>.wasm
	$(TOOLSHED) plugins validate .

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
