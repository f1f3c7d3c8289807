package wasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolshed/toolshed/host/manifest"
)

// GrantsFile is the operator's grants and caps as a JSON file:
//
//	{
//	  "caps": {"timeout_ms": 30000, "max_memory_mb": 256, "max_output_kb": 4096,
//	           "max_log_kb": 64, "max_log_lines": 1000, "max_artifacts": 8, "max_artifact_mb": 32,
//	           "max_module_mb": 32, "compile_timeout_ms": 30000},
//	  "plugins": {
//	    "weather": {"sha256": "9f86d0…",
//	                "config": {"weather.endpoint": "https://api.example.com"},
//	                "http": {"allow": ["https://api.example.com"]}},
//	    "glossary": {"mounts": {"glossary": "/srv/glossary"}},
//	    "textkit": {"log": true},
//	    "reports": {"client": ["log", "progress", "sample", "elicit"]}
//	  }
//	}
//
// Unknown fields are errors. Relative mount directories are relative to
// the file. Every "caps" key is optional; an absent or zero one means the
// default ceiling (see Caps). "sha256" pins a plugin's grants to its
// module (see Grants.SHA256).
type GrantsFile struct {
	// Databases are read by the command line (host/sqlcap), not here:
	// name → {"driver": "sqlite", "dsn": "path/to.db"}; a PostgreSQL
	// database whose role is privileged is refused unless it also says
	// "allow_privileged": true.
	Databases map[string]struct {
		Driver          string `json:"driver"`
		DSN             string `json:"dsn"`
		AllowPrivileged bool   `json:"allow_privileged"`
	} `json:"databases"`
	Caps struct {
		TimeoutMS        int `json:"timeout_ms"`
		MaxMemoryMB      int `json:"max_memory_mb"`
		MaxOutputKB      int `json:"max_output_kb"`
		MaxLogKB         int `json:"max_log_kb"`
		MaxLogLines      int `json:"max_log_lines"`
		MaxArtifacts     int `json:"max_artifacts"`
		MaxArtifactMB    int `json:"max_artifact_mb"`
		MaxModuleMB      int `json:"max_module_mb"`
		CompileTimeoutMS int `json:"compile_timeout_ms"`
	} `json:"caps"`
	Plugins map[string]struct {
		SHA256 string            `json:"sha256"`
		Log    bool              `json:"log"`
		Config map[string]string `json:"config"`
		Mounts map[string]string `json:"mounts"`
		HTTP   struct {
			Allow            []string `json:"allow"`
			AllowPrivate     bool     `json:"allow_private"`
			MaxResponseBytes int64    `json:"max_response_bytes"`
			TimeoutMS        int      `json:"timeout_ms"`
		} `json:"http"`
		SQL       string   `json:"sql"`
		Artifacts string   `json:"artifacts"`
		Client    []string `json:"client"`
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
	fc := f.Caps
	caps := Caps{Timeout: time.Duration(fc.TimeoutMS) * time.Millisecond, MaxMemoryMB: fc.MaxMemoryMB, MaxOutputKB: fc.MaxOutputKB,
		MaxLogKB: fc.MaxLogKB, MaxLogLines: fc.MaxLogLines, MaxArtifacts: fc.MaxArtifacts, MaxArtifactMB: fc.MaxArtifactMB,
		MaxModuleMB: fc.MaxModuleMB, CompileTimeout: time.Duration(fc.CompileTimeoutMS) * time.Millisecond}
	if min(fc.TimeoutMS, fc.MaxMemoryMB, fc.MaxOutputKB, fc.MaxLogKB, fc.MaxLogLines, fc.MaxArtifacts,
		fc.MaxArtifactMB, fc.MaxModuleMB, fc.CompileTimeoutMS) < 0 {
		return Caps{}, nil, fmt.Errorf("%s: caps: negative values", path)
	}
	grants := map[string]Grants{}
	for name, p := range f.Plugins {
		if p.SHA256 != "" && !isHexSHA256(p.SHA256) {
			return Caps{}, nil, fmt.Errorf("%s: plugins.%s.sha256: %q is not a hex sha256", path, name, p.SHA256)
		}
		g := Grants{SHA256: p.SHA256, Log: p.Log, Config: p.Config, Mounts: map[string]string{}, SQL: p.SQL, Artifacts: p.Artifacts,
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
		for i, f := range p.Client {
			if !slices.Contains(manifest.ClientFeatures, f) {
				return Caps{}, nil, fmt.Errorf("%s: plugins.%s.client[%d]: %q is not a client feature (one of %s)", path, name, i, f,
					strings.Join(manifest.ClientFeatures, ", "))
			}
		}
		g.Client = p.Client
		grants[name] = g
	}
	return caps, grants, nil
}

func isHexSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}
