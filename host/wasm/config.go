package wasm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// GrantsFile is the operator's grants and caps as a JSON file:
//
//	{
//	  "caps": {"timeout_ms": 30000, "max_memory_mb": 256, "max_output_kb": 4096},
//	  "plugins": {
//	    "weather": {"config": {"weather.endpoint": "https://api.example.com"},
//	                "http": {"allow": ["https://api.example.com"]}},
//	    "glossary": {"mounts": {"glossary": "/srv/glossary"}},
//	    "textkit": {"log": true}
//	  }
//	}
//
// Unknown fields are errors. Relative mount directories are relative to
// the file.
type GrantsFile struct {
	// Databases are read by the command line (host/sqlcap), not here:
	// name → {"driver": "sqlite", "dsn": "path/to.db"}.
	Databases map[string]struct {
		Driver string `json:"driver"`
		DSN    string `json:"dsn"`
	} `json:"databases"`
	Caps struct {
		TimeoutMS   int `json:"timeout_ms"`
		MaxMemoryMB int `json:"max_memory_mb"`
		MaxOutputKB int `json:"max_output_kb"`
	} `json:"caps"`
	Plugins map[string]struct {
		Log    bool              `json:"log"`
		Config map[string]string `json:"config"`
		Mounts map[string]string `json:"mounts"`
		HTTP   struct {
			Allow            []string `json:"allow"`
			AllowPrivate     bool     `json:"allow_private"`
			MaxResponseBytes int64    `json:"max_response_bytes"`
			TimeoutMS        int      `json:"timeout_ms"`
		} `json:"http"`
		SQL       string `json:"sql"`
		Artifacts string `json:"artifacts"`
	} `json:"plugins"`
}

// ReadGrantsFile decodes a grants file strictly.
func ReadGrantsFile(path string) (*GrantsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f GrantsFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// LoadGrants reads a grants file into Options' Caps and Grants.
func LoadGrants(path string) (Caps, map[string]Grants, error) {
	f, err := ReadGrantsFile(path)
	if err != nil {
		return Caps{}, nil, err
	}
	caps := Caps{Timeout: time.Duration(f.Caps.TimeoutMS) * time.Millisecond, MaxMemoryMB: f.Caps.MaxMemoryMB, MaxOutputKB: f.Caps.MaxOutputKB}
	if caps.Timeout < 0 || caps.MaxMemoryMB < 0 || caps.MaxOutputKB < 0 {
		return Caps{}, nil, fmt.Errorf("%s: caps: negative values", path)
	}
	grants := map[string]Grants{}
	for name, p := range f.Plugins {
		g := Grants{Log: p.Log, Config: p.Config, Mounts: map[string]string{}, SQL: p.SQL, Artifacts: p.Artifacts,
			HTTP: HTTPGrant{Allow: p.HTTP.Allow, AllowPrivate: p.HTTP.AllowPrivate,
				MaxResponseBytes: p.HTTP.MaxResponseBytes, Timeout: time.Duration(p.HTTP.TimeoutMS) * time.Millisecond}}
		for m, dir := range p.Mounts {
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(filepath.Dir(path), dir)
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return Caps{}, nil, fmt.Errorf("%s: plugins.%s.mounts.%s: %s is not a directory", path, name, m, dir)
			}
			g.Mounts[m] = dir
		}
		for i, o := range p.HTTP.Allow {
			if _, err := normOrigin(o); err != nil {
				return Caps{}, nil, fmt.Errorf("%s: plugins.%s.http.allow[%d]: %v", path, name, i, err)
			}
		}
		grants[name] = g
	}
	return caps, grants, nil
}
