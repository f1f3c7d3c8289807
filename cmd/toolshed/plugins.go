package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
)

const pluginsUsage = `usage: toolshed plugins list [--plugins DIR] [--json]
       toolshed plugins validate [--compile] [DIR | --plugins DIR]
       toolshed plugins pin [--grants FILE] MANIFEST.json...
       toolshed plugins new [--lang go|c] [--sdk DIR] NAME
       toolshed plugins import --extism [--servlet] [--name NAME] [-o FILE] MODULE.wasm
       toolshed plugins push REF MANIFEST.json
       toolshed plugins pull REF [DIR]

Run "toolshed plugins COMMAND -h" for a command's flags.
`

func cmdPlugins(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginsUsage)
		return errUsage
	}
	switch args[0] {
	case "list":
		return pluginsList(args[1:], stdout, stderr)
	case "validate":
		return pluginsValidate(args[1:], stdout, stderr)
	case "pin":
		return pluginsPin(args[1:], stdout, stderr)
	case "push", "pull":
		return pluginsRegistry(args[0], args[1:], stdout, stderr)
	case "new":
		return pluginsNew(args[1:], stdout, stderr)
	case "import":
		return pluginsImport(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, pluginsUsage)
		return nil
	default:
		fmt.Fprintf(stderr, "toolshed plugins: unknown command %q\n\n%s", args[0], pluginsUsage)
		return errUsage
	}
}

type pluginJSON struct {
	Name     string     `json:"name"`
	Version  string     `json:"version"`
	Manifest string     `json:"manifest"`
	Module   string     `json:"module"`
	Tools    []toolJSON `json:"tools"`
}

type toolJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type errorJSON struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

func pluginsList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins list", stderr)
	dir := fs.String("plugins", "", pluginDirUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed plugins list [--plugins DIR] [--json]")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return errUsage
	}
	if *dir, err = pluginDir(*dir); err != nil {
		return err
	}
	snap, err := loadCatalog(*dir, nil)
	if err != nil {
		return err
	}
	if *asJSON {
		v := struct {
			Generation uint64       `json:"generation"`
			Dir        string       `json:"dir"`
			Plugins    []pluginJSON `json:"plugins"`
			Errors     []errorJSON  `json:"errors"`
		}{snap.Generation, snap.Dir, []pluginJSON{}, []errorJSON{}}
		for _, p := range snap.Plugins {
			pj := pluginJSON{Name: p.Name(), Version: p.Manifest.Version, Manifest: p.ManifestPath, Module: p.ModulePath}
			for _, t := range p.Tools {
				pj.Tools = append(pj.Tools, toolJSON{t.Name(), t.Spec.Description})
			}
			v.Plugins = append(v.Plugins, pj)
		}
		for _, e := range snap.Errors {
			v.Errors = append(v.Errors, errorJSON{e.File, e.Error()})
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tVERSION\tTOOLS")
	for _, p := range snap.Plugins {
		var names []string
		for _, t := range p.Tools {
			names = append(names, t.Name())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name(), p.Manifest.Version, strings.Join(names, ", "))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%s, %s in %s\n", plural(len(snap.Plugins), "plugin"), plural(len(snap.Tools), "tool"), snap.Dir)
	for _, e := range snap.Errors {
		fmt.Fprintf(stdout, "failed: %s\n", indent(e.Error()))
	}
	return nil
}

// pluginsValidate loads a plugin directory as serve does (admission) and
// prints one verdict per manifest in file-name order: ok, or every problem
// of the file. --compile also compiles each admitted module as serve does
// when one of its tools is first needed, and starts one instance of it
// (its start function and _initialize run, with the folder's grants): a
// module that traps there fails, with the end of its stderr. --against
// DIR also loads the folder the plugins will join and reports their
// clashes with its tools. The folder's own grants file, if any, must load
// too.
func pluginsValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins validate", stderr)
	dirFlag := fs.String("plugins", "", pluginDirUsage)
	compile := fs.Bool("compile", false, "also compile every module and start an instance of it (slower; what serve does when a tool is first needed)")
	against := fs.String("against", "", "also check for clashes with the tools of the plugin `DIR` these plugins will join (a served folder; \"bundled\": the bundled catalog)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed plugins validate [--compile] [--against DIR] [DIR | --plugins DIR]\n\n"+
			"Checks every manifest and module of DIR with serve's rules: the manifest is valid, its module\n"+
			"is there, matches its sha256 and exports the ABI; exits 1 if any fails.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (len(pos) == 1 && *dirFlag != "") {
		fs.Usage()
		return errUsage
	}
	dir := *dirFlag
	if len(pos) == 1 {
		dir = pos[0]
	}
	if dir, err = pluginDir(dir); err != nil {
		return err
	}
	snap, err := loadCatalogWith(dir, nil, true) // every module read: the full verdict
	if err != nil {
		return err
	}
	type verdict struct {
		file string
		ok   string
		err  string
	}
	var out []verdict
	failed := 0
	if *against != "" {
		clashes, err := clashesAgainst(snap, *against)
		if err != nil {
			return err
		}
		for _, c := range clashes {
			msg := c.msg
			if !strings.HasPrefix(msg, c.file+": ") {
				msg = c.file + ": " + msg
			}
			out = append(out, verdict{file: c.file, err: msg})
			failed++
		}
	}
	if *compile {
		opts := &wasm.Options{PoolSize: -1, Logger: slog.New(slog.DiscardHandler)}
		if op, err := loadOperator(dir, "", sqlcap.Options{}); err == nil { // the folder's grants, as call gives them
			defer op.close()
			opts = op.options("", -1, io.Discard)
		}
		rt, err := wasm.New(opts)
		if err != nil {
			return err
		}
		defer rt.Close(context.Background())
		for _, p := range snap.Plugins {
			pl, err := rt.Plugin(p)
			if err == nil {
				err = pl.Instantiate(context.Background())
			}
			if err != nil {
				out = append(out, verdict{file: p.ManifestPath, err: p.ManifestPath + ": " + err.Error()})
				failed++
				continue
			}
			out = append(out, verdict{file: p.ManifestPath, ok: fmt.Sprintf("%s (%s %s, %s, compiled)", p.ManifestPath, p.Name(), p.Manifest.Version, plural(len(p.Tools), "tool"))})
		}
	} else {
		for _, p := range snap.Plugins {
			// The module against its manifest: its ABI, an Extism
			// plugin's exports (the catalog checked the module alone).
			code, err := p.ReadModule()
			if err == nil {
				err = wasm.CheckModuleFor(p.Manifest, code)
			}
			if err != nil {
				out = append(out, verdict{file: p.ManifestPath, err: fmt.Sprintf("%s: module %s: %v", p.ManifestPath, p.ModulePath, err)})
				failed++
				continue
			}
			out = append(out, verdict{file: p.ManifestPath, ok: fmt.Sprintf("%s (%s %s, %s)", p.ManifestPath, p.Name(), p.Manifest.Version, plural(len(p.Tools), "tool"))})
		}
	}
	for _, e := range snap.Errors {
		msg := e.Error()
		if !strings.HasPrefix(msg, e.File+": ") {
			msg = e.File + ": " + msg
		}
		out = append(out, verdict{file: e.File, err: msg})
		failed++
	}
	if own := filepath.Join(dir, catalog.GrantsFile); fileExists(own) {
		if _, _, err := wasm.LoadGrants(own); err != nil {
			out = append(out, verdict{file: own, err: err.Error()})
			failed++
		} else {
			out = append(out, verdict{file: own, ok: own + " (the folder's grants)"})
		}
	}
	slices.SortStableFunc(out, func(a, b verdict) int { return strings.Compare(a.file, b.file) })
	for _, v := range out {
		if v.err != "" {
			fmt.Fprintf(stdout, "FAILED  %s\n", indent(v.err))
		} else {
			fmt.Fprintf(stdout, "ok      %s\n", v.ok)
		}
	}
	total := len(snap.Plugins) + len(snap.Errors)
	if failed > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %s failed", failed, plural(len(out), "file"))}
	}
	if total == 0 {
		return &exitError{code: 1, msg: "no manifest (*.json) in " + dir}
	}
	fmt.Fprintf(stdout, "%s, %s: all valid\n", plural(len(snap.Plugins), "manifest"), plural(len(snap.Tools), "tool"))
	return nil
}

// plural writes a count and a noun, in the plural unless the count is 1
// ("1 tool", "2 tools", "3 queries").
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

var sha256Field = regexp.MustCompile(`("sha256"\s*:\s*")([0-9a-fA-F]*)(")`)

// pluginsPin writes the sha256 of each manifest's module into the manifest,
// keeping the rest of the file as it is. Run it after building a module.
// With --grants FILE it also pins the module in the operator's grants
// (plugins.NAME.sha256), so that the plugin's grants apply to that module
// only.
func pluginsPin(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins pin", stderr)
	grantsPath := fs.String("grants", "", "also write each module's sha256 into this grants `FILE` (plugins.NAME.sha256)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed plugins pin [--grants FILE] MANIFEST.json...")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errUsage
	}
	pins := map[string]string{} // plugin name → sha256, for --grants
	for _, path := range pos {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m struct {
			Wasm string `json:"wasm"`
		}
		if err := json.Unmarshal(data, &m); err != nil || m.Wasm == "" {
			return fmt.Errorf("%s: no \"wasm\" field to pin (is it a manifest?)", path)
		}
		module, err := os.ReadFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(m.Wasm)))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		sum := sha256.Sum256(module)
		hexSum := hex.EncodeToString(sum[:])
		if len(sha256Field.FindAllIndex(data, -1)) != 1 {
			return fmt.Errorf("%s: want exactly one \"sha256\" field", path)
		}
		out := sha256Field.ReplaceAll(data, []byte("${1}"+hexSum+"${3}"))
		if _, err := manifest.Decode(out); err != nil {
			return fmt.Errorf("%s: not pinned, the manifest is invalid:\n%w", path, err)
		}
		if string(out) != string(data) {
			if err := os.WriteFile(path, out, 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "%s: sha256 %s\n", path, hexSum)
		if m, err := manifest.Decode(out); err == nil {
			pins[m.Name] = hexSum
		}
	}
	if *grantsPath != "" {
		return pinGrants(*grantsPath, pins, stdout)
	}
	return nil
}

// pinGrants writes plugins.NAME.sha256 into the grants file for each pin,
// creating the file or the plugin's entry when missing. The file is
// rewritten as indented JSON with sorted keys; it must still load.
func pinGrants(path string, pins map[string]string, stdout io.Writer) error {
	doc := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case !os.IsNotExist(err):
		return err
	}
	plugins, _ := doc["plugins"].(map[string]any)
	if plugins == nil {
		if doc["plugins"] != nil {
			return fmt.Errorf("%s: \"plugins\" is not an object", path)
		}
		plugins = map[string]any{}
		doc["plugins"] = plugins
	}
	for name, sum := range pins {
		g, _ := plugins[name].(map[string]any)
		if g == nil {
			if plugins[name] != nil {
				return fmt.Errorf("%s: plugins.%s is not an object", path, name)
			}
			g = map[string]any{}
			plugins[name] = g
		}
		g["sha256"] = sum
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	out = append(out, '\n')
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	if _, _, err := wasm.LoadGrants(tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: not pinned, the grants would not load: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		fmt.Fprintf(stdout, "%s: plugins.%s.sha256 %s\n", path, name, pins[name])
	}
	return nil
}

// clash is a manifest's clash with the folder it will join.
type clash struct{ file, msg string }

// clashesAgainst loads the folder dir ("bundled": the bundled catalog) as
// its manifests say, modules unread (the clash is in the names), and
// returns the clashes of snap's plugins with its tools.
func clashesAgainst(snap *catalog.Snapshot, dir string) ([]clash, error) {
	if dir == "bundled" {
		d, err := findCatalog()
		if err != nil {
			return nil, fmt.Errorf("--against bundled: %w", err)
		}
		dir = d
	}
	into, err := catalog.Load(dir, nil)
	if err != nil {
		return nil, fmt.Errorf("--against: %w", err)
	}
	var out []clash
	for _, e := range snap.Clashes(into) {
		out = append(out, clash{e.File, e.Error()})
	}
	return out, nil
}
