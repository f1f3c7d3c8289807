// Package ocitest serves a real OCI registry (go-containerregistry's
// in-memory registry) on 127.0.0.1 for tests, with the faults a fleet
// meets: the registry down, and a man in the middle that alters blobs.
// It also builds real plugins to push: the textkit plugin, compiled to
// WebAssembly, under any version.
package ocitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/toolshed/toolshed/internal/oci"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// Registry is an OCI registry on 127.0.0.1. Its fields may be changed
// while it serves; it is safe for concurrent use.
type Registry struct {
	// Host is HOST:PORT, for references: Host + "/plugins/textkit:1".
	Host string
	srv  *httptest.Server

	down     atomic.Bool
	hang     atomic.Bool
	mu       sync.Mutex
	tamper   map[string]bool // blob digests whose content is altered on the way out
	requests atomic.Int64
	auth     [2]string
}

// NewRegistry starts a registry; it stops with the test.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{tamper: map[string]bool{}}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if r.hang.Load() {
			<-req.Context().Done() // a registry that accepts and never answers
			return
		}
		if r.down.Load() {
			http.Error(w, "registry down for maintenance", http.StatusServiceUnavailable)
			return
		}
		r.mu.Lock()
		user, pass := r.auth[0], r.auth[1]
		r.mu.Unlock()
		if user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:") {
			d := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
			r.mu.Lock()
			bad := r.tamper[d]
			r.mu.Unlock()
			if bad {
				rec := httptest.NewRecorder()
				inner.ServeHTTP(rec, req)
				body := rec.Body.Bytes()
				if len(body) > 0 {
					body[len(body)/2] ^= 0xff // one byte altered, same length
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(body)
				return
			}
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// SetDown makes every request fail with 503 (true) or serves again.
func (r *Registry) SetDown(down bool) { r.down.Store(down) }

// SetHang makes every request wait, unanswered, until the client gives
// up (true), or serves again.
func (r *Registry) SetHang(hang bool) { r.hang.Store(hang) }

// Tamper alters the content of the blob with this digest on every fetch
// from now on (a compromised mirror or proxy).
func (r *Registry) Tamper(digest string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tamper[digest] = true
}

// RequireAuth requires HTTP basic authentication with these credentials.
func (r *Registry) RequireAuth(user, pass string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.auth = [2]string{user, pass}
}

// Requests counts the requests received.
func (r *Registry) Requests() int64 { return r.requests.Load() }

var shaField = regexp.MustCompile(`("sha256"\s*:\s*")[0-9a-fA-F]*(")`)
var versionField = regexp.MustCompile(`("version"\s*:\s*")[^"]*(")`)

// Textkit returns the textkit plugin (its bundled manifest, its module
// built from source) at version, pinned. The module is built once per
// test process.
func Textkit(t testing.TB, version string) *oci.Plugin {
	t.Helper()
	root := repoRoot(t)
	module, err := os.ReadFile(wasmbuild.Build(t, filepath.Join(root, "plugins", "textkit")))
	if err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile(filepath.Join(root, "plugin-manifests", "textkit.json"))
	if err != nil {
		t.Fatal(err)
	}
	man = SetPin(man, module)
	man = versionField.ReplaceAll(man, []byte("${1}"+version+"${2}"))
	p, err := oci.NewPlugin(man, module)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// SetPin writes the module's sha256 into a manifest.
func SetPin(manifestJSON, module []byte) []byte {
	p := &oci.Plugin{Module: module}
	return shaField.ReplaceAll(manifestJSON, []byte("${1}"+p.ModuleSHA256()+"${2}"))
}

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// SameFile reports whether a file holds exactly want.
func SameFile(path string, want []byte) bool {
	got, err := os.ReadFile(path)
	return err == nil && bytes.Equal(got, want)
}

// Artifact is an OCI manifest of the plugin artifact type with these
// layers, as a producer could write it by hand.
func Artifact(layers ...ocispec.Descriptor) ocispec.Manifest {
	return ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: oci.ArtifactType, Config: ocispec.DescriptorEmptyJSON, Layers: layers}
}

// PushUnchecked pushes a plugin's artifact as oci.Client.Push packs it,
// without Push's checks: what a careless or hostile producer can push.
func PushUnchecked(t testing.TB, host, repo, tag string, p *oci.Plugin) {
	t.Helper()
	PushManifest(t, host, repo, tag, Artifact(content.NewDescriptorFromBytes(oci.ManifestMediaType, p.Manifest),
		content.NewDescriptorFromBytes(oci.ModuleMediaType, p.Module)), p.Manifest, p.Module)
}

// PushManifest pushes a hand-made OCI manifest and its blobs (the empty
// config blob is added), tagged.
func PushManifest(t testing.TB, host, repoName, tag string, m ocispec.Manifest, blobs ...[]byte) {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(host + "/" + repoName)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	for _, b := range append(blobs, ocispec.DescriptorEmptyJSON.Data) {
		d := content.NewDescriptorFromBytes("application/octet-stream", b)
		if ok, _ := repo.Exists(ctx, d); !ok {
			if err := repo.Push(ctx, d, bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	raw, _ := json.Marshal(m)
	d := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	if err := repo.Manifests().PushReference(ctx, d, bytes.NewReader(raw), tag); err != nil {
		t.Fatal(err)
	}
}
