package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/evalrun"
)

// evalDir holds the converted sets committed to the repository.
const evalDir = "../testdata/eval"

// maxSetBytes bounds what one committed set may weigh, and maxAllBytes all
// of them: the repository carries samples for measurement, not corpora.
const (
	maxSetBytes = 4 << 20
	maxAllBytes = 15 << 20
)

// TestCommittedSets checks every set under bench/testdata/eval: tool names
// unique after folding, every label naming a tool, ids unique, a README
// naming the source and licence, `toolshed eval` able to read both files,
// and the sizes within bounds.
func TestCommittedSets(t *testing.T) {
	dirs, err := os.ReadDir(evalDir)
	if err != nil {
		t.Fatal(err)
	}
	total, sets := int64(0), 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		sets++
		dir := filepath.Join(evalDir, d.Name())
		t.Run(d.Name(), func(t *testing.T) {
			size := int64(0)
			for _, f := range []string{"tools.jsonl", "queries.jsonl", "README.md"} {
				st, err := os.Stat(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				size += st.Size()
			}
			total += size
			if size > maxSetBytes {
				t.Errorf("%d bytes, more than %d", size, maxSetBytes)
			}
			tools := readLines[Tool](t, filepath.Join(dir, "tools.jsonl"))
			queries := readLines[Query](t, filepath.Join(dir, "queries.jsonl"))
			if err := Check(tools, queries); err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(tools); i++ {
				if tools[i-1].Name >= tools[i].Name {
					t.Fatalf("tools not sorted by name at %q, %q", tools[i-1].Name, tools[i].Name)
				}
			}
			if _, err := evalrun.ReadTools(filepath.Join(dir, "tools.jsonl")); err != nil {
				t.Errorf("toolshed eval cannot read the catalog: %v", err)
			}
			if _, err := evalrun.ReadQueries(filepath.Join(dir, "queries.jsonl")); err != nil {
				t.Errorf("toolshed eval cannot read the queries: %v", err)
			}
			readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(readme, []byte("- Licence: ")) {
				t.Errorf("README.md names no licence")
			}
			c, known := lookup(d.Name())
			if !known {
				t.Logf("%s is not made by a converter here; its source checks are skipped", d.Name())
				return
			}
			if !c.Copy {
				t.Errorf("%s is committed but its licence (%s) does not allow copying", d.Name(), c.Licence)
			}
			for _, want := range []string{c.Repo, "- Licence: " + c.Licence, "- Snapshot commit: ", "\n## How natural the requests are\n"} {
				if !bytes.Contains(readme, []byte(want)) {
					t.Errorf("README.md lacks %q", want)
				}
			}
			if strings.Contains(string(readme), "not recorded") {
				t.Errorf("README.md does not record the source commit")
			}
		})
	}
	if sets == 0 {
		t.Fatal("no committed sets")
	}
	if total > maxAllBytes {
		t.Errorf("committed sets weigh %d bytes, more than %d", total, maxAllBytes)
	}
}
