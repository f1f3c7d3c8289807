// Command sets converts public tool-retrieval data sets into the files
// `toolshed eval` reads: tools.jsonl (one tool a line: name, description,
// parameters as a JSON Schema object) and queries.jsonl (one labelled
// request a line: query, tools, id, split, lang), with a README.md that
// records the source, its licence and every count of the conversion.
//
//	cd bench && go run ./sets -from DIR -set NAME -out DIR [-commit SHA]
//
// DIR is a checkout of the set's source repository, laid out as upstream
// publishes it; `go run ./sets -list` names the sets and their sources.
// The output is deterministic: the same source gives the same bytes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "checkout of the source repository")
	name := fs.String("set", "", "set to convert (see -list)")
	out := fs.String("out", "", "folder to write tools.jsonl, queries.jsonl and README.md into")
	commit := fs.String("commit", "", "commit of the source checkout, recorded in README.md (default: read from DIR/.git)")
	list := fs.Bool("list", false, "list the sets this command converts")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./sets -from DIR -set NAME -out DIR [-commit SHA]\n       go run ./sets -list")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *list {
		for _, c := range converters() {
			fmt.Fprintf(stdout, "%-14s %s (%s, %s)\n", c.Name, c.Repo, c.Licence, c.Language)
		}
		return 0
	}
	if *from == "" || *name == "" || *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	c, ok := lookup(*name)
	if !ok {
		fmt.Fprintf(stderr, "sets: unknown set %q; known: %s\n", *name, strings.Join(names(), ", "))
		return 2
	}
	res, err := convert(c, *from, *commit)
	if err != nil {
		fmt.Fprintf(stderr, "sets: %s: %v\n", c.Name, err)
		return 1
	}
	for _, u := range res.set.Unknown {
		fmt.Fprintf(stderr, "sets: %s: dropped query, unresolved label %s\n", c.Name, u)
	}
	if err := res.write(*out); err != nil {
		fmt.Fprintf(stderr, "sets: %s: %v\n", c.Name, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d tools, %d queries (%d dropped for unresolved labels) in %s\n",
		c.Name, len(res.set.Tools()), len(res.set.Queries()), res.set.Stats.DroppedQueries, *out)
	return 0
}

func names() []string {
	var out []string
	for _, c := range converters() {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}

func lookup(name string) (Converter, bool) {
	for _, c := range converters() {
		if c.Name == name {
			return c, true
		}
	}
	return Converter{}, false
}

// converters lists every set, sorted by name.
func converters() []Converter {
	all := []Converter{aceBench("zh"), aceBench("en"), apiBank(), callNavi(), nesTools(), sgd(), sgdX(1), sgdX(2), sgdX(3), sgdX(4), sgdX(5), taskBench("dailylifeapis"), taskBench("huggingface"), taskBench("multimedia"), toolAlpaca(), toolEyes()}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}
