package config

import (
	"strings"
	"testing"
)

// TestPlaceholdersRefused: the shipped Secret's placeholders, set as the
// Deployment sets them (environment variables), are refused at start with
// a message that says what to do, not taken as real keys.
func TestPlaceholdersRefused(t *testing.T) {
	_, err := Load(Source{Env: []string{
		"TOOLSHED_SERVER_API_KEYS=REPLACE-with-at-least-16-characters,a-real-key-of-24-characters",
		"TOOLSHED_SERVER_CONTINUATION_KEY=REPLACE-with-base64-of-32-random-bytes",
		"TOOLSHED_MODEL_API_KEY=replace-me",
	}})
	if err == nil {
		t.Fatal("placeholders accepted")
	}
	for _, want := range []string{"server.api_keys: key 1 is still the example's placeholder", "server.continuation_key: is still the example's placeholder",
		"model.api_key: is still the example's placeholder", "put a real key in the Secret"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "key 2") {
		t.Errorf("a real key was refused: %v", err)
	}
}
