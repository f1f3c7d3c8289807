package manifest

import (
	"slices"
	"strings"
	"testing"
)

// TestClientCapability: capabilities.client takes the four features, each
// once; anything else is reported by its index with the list of features.
func TestClientCapability(t *testing.T) {
	m, err := Decode(setIn("capabilities", "client", []any{"log", "progress", "sample", "elicit"}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Capabilities.Client, ClientFeatures) {
		t.Fatalf("client: %v", m.Capabilities.Client)
	}
	_, err = Decode(setIn("capabilities", "client", []any{"log", "sing", "log", "Sample"}))
	es := fieldErrors(t, err)
	var got []string
	for _, e := range es {
		got = append(got, e.Field+": "+e.Reason)
	}
	want := []string{
		`capabilities.client[1]: "sing" is not a client feature (one of log, progress, sample, elicit)`,
		`capabilities.client[2]: "log" is listed twice`,
		`capabilities.client[3]: "Sample" is not a client feature (one of log, progress, sample, elicit)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err = Decode(setIn("capabilities", "client", "log"))
	if es := fieldErrors(t, err); !strings.Contains(es[0].Field, "capabilities.client") {
		t.Fatalf("a string for the list: %v", es)
	}
}
