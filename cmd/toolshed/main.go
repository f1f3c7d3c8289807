// Command toolshed is the Toolshed host: it searches and lists the plugin
// catalog, validates plugin manifests and measures tool search.
//
//	toolshed search [--plugins DIR] [--limit N] [--json] [--stats] [--lexicon FILE] QUERY
//	toolshed plugins list [--plugins DIR] [--json]
//	toolshed plugins validate [--compile] [DIR | --plugins DIR]
//	toolshed plugins new [--lang go|c] NAME
//	toolshed eval --tools TOOLS.jsonl --queries QUERIES.jsonl [--json] [--baseline]
//	toolshed call [--plugins DIR] [--grants FILE] [--json] TOOL 'JSON-ARGS'
//	toolshed run [--plugins DIR] [--base-url URL] [--model M] [--search-mode keyword|llm|hybrid] [--json] PROMPT
//	toolshed chat [--plugins DIR] [--base-url URL] [--model M] [--search-mode MODE]
//	toolshed serve [--config FILE] [--addr 127.0.0.1:8080] [--plugins DIR] [--base-url URL] [--open]
//	toolshed mcp [--config FILE] [--plugins DIR] [--search-mode MODE]
//	toolshed config print [--config FILE]
//	toolshed plugins pin MANIFEST.json
//	toolshed version
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolshed/toolshed/internal/buildinfo"
)

// version is the release, set at build time (-ldflags "-X
// main.version=..."); without it, the version the Go toolchain recorded
// (buildinfo.Version).
var version string

func init() {
	if version == "" {
		version = buildinfo.Version()
	}
}

// exitError carries an exit code up to main without printing twice.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// errUsage marks a command-line mistake (exit code 2).
var errUsage = errors.New("usage")

func main() {
	stdin = os.Stdin
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// stdin feeds "toolshed chat"; tests replace it.
var stdin io.Reader = strings.NewReader("")

const usage = `Toolshed: a host for LLM-agent tools with tool search.

Usage:
  toolshed search [--plugins DIR] [--limit N] [--json] [--stats] [--lexicon FILE] QUERY
  toolshed plugins list [--plugins DIR] [--json]
  toolshed plugins validate [--compile] [DIR | --plugins DIR]
  toolshed plugins new [--lang go|c] NAME
  toolshed eval --tools TOOLS.jsonl --queries QUERIES.jsonl [--json] [--baseline]
  toolshed call [--plugins DIR] [--grants FILE] [--json] TOOL 'JSON-ARGS'
  toolshed run [--plugins DIR] [--base-url URL] [--model M] [--search-mode keyword|llm|hybrid] [--json] PROMPT
  toolshed chat [--plugins DIR] [--base-url URL] [--model M] [--search-mode MODE]
  toolshed serve [--config FILE] [--addr 127.0.0.1:8080] [--plugins DIR] [--base-url URL] [--open]
  toolshed mcp [--config FILE] [--plugins DIR] [--search-mode MODE]
  toolshed config print [--config FILE]
  toolshed plugins pin MANIFEST.json
  toolshed version

The plugin directory (--plugins) defaults to $TOOLSHED_PLUGINS, else the bundled
catalog: plugin-manifests beside the binary or one level up, else
PREFIX/share/toolshed/plugin-manifests, else ./plugin-manifests, else the
catalog the binary carries (written once to the user's cache folder).
run, chat, serve and mcp read toolshed.yaml (see toolshed.example.yaml),
TOOLSHED_* environment variables and flags, in that order.
Run "toolshed COMMAND -h" for a command's flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "search":
		err = cmdSearch(args[1:], stdout, stderr)
	case "plugins":
		err = cmdPlugins(args[1:], stdout, stderr)
	case "eval":
		err = cmdEval(args[1:], stdout, stderr)
	case "call":
		err = cmdCall(args[1:], stdout, stderr)
	case "run":
		err = cmdRun(args[1:], stdout, stderr)
	case "chat":
		err = cmdChat(args[1:], stdin, stdout, stderr)
	case "serve":
		err = cmdServe(args[1:], stdout, stderr)
	case "mcp":
		err = cmdMCP(args[1:], stdin, stdout, stderr)
	case "config":
		err = cmdConfigCmd(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "toolshed", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "toolshed: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(stderr, "toolshed:", ee.msg)
		}
		return ee.code
	default:
		fmt.Fprintln(stderr, "toolshed:", err)
		return 1
	}
}

// newFlags returns a flag set that reports errors to stderr and does not exit.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("toolshed "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses flags, allowing flags after positional arguments
// ("toolshed search 查天气 --json").
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
