package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeedFiles lists testdata/fuzz-seeds/*.json: valid-*.json decode,
// broken-*.json do not.
func fuzzSeedFiles(tb testing.TB) []string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "fuzz-seeds", "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) == 0 {
		tb.Fatal("no seeds in testdata/fuzz-seeds")
	}
	return paths
}

// TestFuzzSeeds keeps the seed files honest: valid ones decode, broken
// ones fail.
func TestFuzzSeeds(t *testing.T) {
	for _, p := range fuzzSeedFiles(t) {
		base := filepath.Base(p)
		_, err := LoadFile(p)
		switch {
		case strings.HasPrefix(base, "valid-"):
			if err != nil {
				t.Errorf("%s: %v", base, err)
			}
		case strings.HasPrefix(base, "broken-"):
			if err == nil {
				t.Errorf("%s decodes", base)
			}
		default:
			t.Errorf("%s: seed names start with valid- or broken-", base)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, p := range fuzzSeedFiles(f) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"null",
		"[]",
		"{}",
		`{"name":"a","name":"a"}`,
		`{"tools":[{"parameters":{"type":"object","properties":{"a":{"type":"strnig"}}}}]}`,
		strings.Repeat("[", 200),
		strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
		baseManifest,
		completeManifest,
		baseManifest + " {}",
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			if m != nil {
				t.Fatalf("manifest and error both returned: %v", err)
			}
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v is not a non-empty Errors", err, err)
			}
			for _, e := range es {
				if e == nil || e.Reason == "" || e.File != "" {
					t.Fatalf("bad FieldError %#v", e)
				}
			}
			return
		}
		if m == nil {
			t.Fatal("nil manifest and nil error")
		}
		if es := m.Validate(); len(es) != 0 {
			t.Fatalf("decoded manifest does not validate: %v", es)
		}
		seen := map[string]string{}
		for _, tl := range m.Tools {
			key := FoldName(tl.Name)
			if other, dup := seen[key]; dup {
				t.Fatalf("tools %q and %q fold to %q", other, tl.Name, key)
			}
			seen[key] = tl.Name
			if isReserved(tl.Name) {
				t.Fatalf("reserved tool name %q accepted", tl.Name)
			}
			if _, err := CompileSchema(tl.Parameters); err != nil {
				t.Fatalf("tool %q: accepted schema does not compile: %v", tl.Name, err)
			}
		}

		enc, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		m2, err := Decode(enc)
		if err != nil {
			t.Fatalf("decoding the re-encoded manifest: %v\n%s", err, enc)
		}
		if m2.Name != m.Name || len(m2.Tools) != len(m.Tools) {
			t.Fatalf("round trip changed the manifest: %q with %d tools, then %q with %d tools",
				m.Name, len(m.Tools), m2.Name, len(m2.Tools))
		}
		enc2, err := json.Marshal(m2)
		if err != nil {
			t.Fatalf("re-encoding twice: %v", err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
	})
}
