package oci_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/internal/oci"
	"github.com/toolshed/toolshed/internal/oci/ocitest"
)

func client(t testing.TB, opts oci.Options) *oci.Client {
	t.Helper()
	if opts.DockerConfig == "" && opts.Username == "" {
		opts.DockerConfig = filepath.Join(t.TempDir(), "config.json") // anonymous, whatever the machine has
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{} // no retries: an outage fails at once
	}
	c, err := oci.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPushPull: a plugin pushed by tag is pulled by tag and by digest
// into an empty folder, byte for byte, and the catalog loads it with its
// module checked; pushing it again gives the same digest and sends no
// blob again.
func TestPushPull(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	p := ocitest.Textkit(t, "1.0.0")
	ref := reg.Host + "/plugins/textkit:1.0.0"
	d, err := c.Push(ctx, ref, p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d, "sha256:") {
		t.Fatalf("digest %q", d)
	}
	before := reg.Requests()
	d2, err := c.Push(ctx, ref, ocitest.Textkit(t, "1.0.0"))
	if err != nil || d2 != d {
		t.Fatalf("second push: %s %v, want %s", d2, err, d)
	}
	if n := reg.Requests() - before; n > 4 { // three HEADs and the manifest
		t.Errorf("second push made %d requests, want at most 4 (blobs not sent again)", n)
	}
	for _, r := range []string{ref, reg.Host + "/plugins/textkit@" + d} {
		got, err := c.Pull(ctx, r)
		if err != nil {
			t.Fatalf("pull %s: %v", r, err)
		}
		if got.Digest != d || !bytes.Equal(got.Manifest, p.Manifest) || !bytes.Equal(got.Module, p.Module) || got.Version != "1.0.0" {
			t.Fatalf("pull %s: digest %s version %s, content equal %v/%v", r, got.Digest, got.Version,
				bytes.Equal(got.Manifest, p.Manifest), bytes.Equal(got.Module, p.Module))
		}
		dir := filepath.Join(t.TempDir(), "plugins") // not there yet
		if err := oci.WriteDir(dir, got, r, false); err != nil {
			t.Fatal(err)
		}
		if !ocitest.SameFile(filepath.Join(dir, "textkit.json"), p.Manifest) || !ocitest.SameFile(filepath.Join(dir, "textkit.wasm"), p.Module) {
			t.Fatal("files differ from what was pushed")
		}
		rec, err := oci.ReadRecord(dir, "textkit")
		if err != nil || rec.Digest != d || rec.Reference != r || rec.ModuleSHA256 != p.ModuleSHA256() {
			t.Fatalf("record %+v %v", rec, err)
		}
		snap, err := catalog.Load(dir, &catalog.Options{RequireModules: true})
		if err != nil || len(snap.Errors) > 0 || len(snap.Plugins) != 1 {
			t.Fatalf("catalog: %v %v", err, snap.Errors)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 3 {
			t.Errorf("folder holds %d files, want manifest, module and record (no temporary file left)", len(entries))
		}
	}
	// The artifact as other tools see it.
	repo, _ := remote.NewRepository(reg.Host + "/plugins/textkit")
	repo.PlainHTTP = true
	desc, rc, err := repo.FetchReference(ctx, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := content.ReadAll(rc, desc)
	rc.Close()
	var m ocispec.Manifest
	json.Unmarshal(raw, &m)
	var pretty bytes.Buffer
	json.Indent(&pretty, raw, "", "  ")
	t.Logf("the OCI manifest of textkit 1.0.0 (%s):\n%s", d, pretty.String())
	if m.ArtifactType != oci.ArtifactType || m.Config.MediaType != ocispec.MediaTypeEmptyJSON || len(m.Layers) != 2 ||
		m.Layers[0].MediaType != oci.ManifestMediaType || m.Layers[1].MediaType != oci.ModuleMediaType ||
		m.Annotations[oci.AnnotationName] != "textkit" || m.Annotations[oci.AnnotationVersion] != "1.0.0" ||
		m.Annotations[oci.AnnotationABIVersion] != "1" || m.Layers[1].Annotations[ocispec.AnnotationTitle] != "textkit.wasm" {
		t.Fatalf("OCI manifest: %s", raw)
	}
}

// TestPullRefusesTamperedLayer: a mirror that alters the module (same
// length) is caught by the layer digest; nothing is written.
func TestPullRefusesTamperedLayer(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	p := ocitest.Textkit(t, "1.0.0")
	ref := reg.Host + "/plugins/textkit:1.0.0"
	if _, err := c.Push(ctx, ref, p); err != nil {
		t.Fatal(err)
	}
	reg.Tamper("sha256:" + p.ModuleSHA256())
	_, err := c.Pull(ctx, ref)
	var ve *oci.VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, content.ErrMismatchedDigest) {
		t.Fatalf("tampered module: err %v, want a VerifyError for a mismatched digest", err)
	}
	t.Logf("tampered module: %v", err)
	reg2 := ocitest.NewRegistry(t)
	ref2 := reg2.Host + "/plugins/textkit:1.0.0"
	c.Push(ctx, ref2, p)
	reg2.Tamper("sha256:" + p.ManifestSHA256())
	if _, err := c.Pull(ctx, ref2); !errors.As(err, &ve) {
		t.Fatalf("tampered manifest layer: err %v", err)
	}
}

// TestPullRefusesBadArtifacts: a mismatched pin, wrong types or layers,
// sizes over the limits, annotations that lie.
func TestPullRefusesBadArtifacts(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	good := ocitest.Textkit(t, "1.0.0")
	otherModule := append(bytes.Clone(good.Module), 0) // a different module the manifest does not pin
	manL := content.NewDescriptorFromBytes(oci.ManifestMediaType, good.Manifest)
	modL := content.NewDescriptorFromBytes(oci.ModuleMediaType, good.Module)
	otherL := content.NewDescriptorFromBytes(oci.ModuleMediaType, otherModule)
	wrongType := ocitest.Artifact(manL, modL)
	wrongType.ArtifactType = "application/vnd.example.other"
	huge := modL
	huge.Size = oci.MaxModuleBytes + 1
	lying := ocitest.Artifact(manL, modL)
	lying.Annotations = map[string]string{oci.AnnotationVersion: "9.9.9"}
	reversed := ocitest.Artifact(modL, manL)
	misnamed := bytes.Replace(good.Manifest, []byte(`"textkit.wasm"`), []byte(`"sql.wasm"`), 1)
	misnamedL := content.NewDescriptorFromBytes(oci.ManifestMediaType, misnamed)
	cases := []struct {
		name  string
		m     ocispec.Manifest
		blobs [][]byte
		want  string
	}{
		{"mismatched pin", ocitest.Artifact(manL, otherL), [][]byte{good.Manifest, otherModule}, "the manifest pins"},
		{"artifact type", wrongType, [][]byte{good.Manifest, good.Module}, "is not a Toolshed plugin"},
		{"one layer", ocitest.Artifact(manL), [][]byte{good.Manifest}, "layers ["},
		{"layers reversed", reversed, [][]byte{good.Manifest, good.Module}, "layers ["},
		{"module over the limit", ocitest.Artifact(manL, huge), [][]byte{good.Manifest}, "larger than"},
		{"annotation lies", lying, [][]byte{good.Manifest, good.Module}, "annotation dev.toolshed.plugin.version"},
		{"module of another name", ocitest.Artifact(misnamedL, modL), [][]byte{misnamed, good.Module}, "a distributed plugin's module is textkit.wasm"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tag := "bad" + string(rune('a'+i))
			ocitest.PushManifest(t, reg.Host, "plugins/textkit", tag, tc.m, tc.blobs...)
			_, err := c.Pull(ctx, reg.Host+"/plugins/textkit:"+tag)
			var ve *oci.VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a VerifyError containing %q", err, tc.want)
			}
		})
	}
	// Push refuses what pull would refuse.
	bad := *good
	bad.Module = otherModule
	if _, err := c.Push(ctx, reg.Host+"/plugins/textkit:x", &bad); err == nil || !strings.Contains(err.Error(), "pins") {
		t.Fatalf("push of a mismatched pin: %v", err)
	}
}

// TestReferences: tags and digests only, and plain HTTP only to loopback
// unless allowed.
func TestReferences(t *testing.T) {
	for _, bad := range []string{"", "textkit", "127.0.0.1:5000/plugins/textkit", "127.0.0.1:5000/Plugins/x:1", "r.example/x@sha256:12"} {
		if _, err := oci.ParseReference(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	r, err := oci.ParseReference("ghcr.io/acme/textkit@sha256:" + strings.Repeat("a", 64))
	if err != nil || !r.Pinned() {
		t.Fatalf("%v %v", r, err)
	}
	if r, _ := oci.ParseReference("ghcr.io/acme/textkit:1"); r.Pinned() {
		t.Fatal("a tag is pinned")
	}
	// A registry that is not loopback is spoken to over HTTPS: a plain
	// HTTP registry there fails the TLS handshake instead of being read.
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	if _, err := c.Push(context.Background(), reg.Host+"/plugins/textkit:1", ocitest.Textkit(t, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	host := strings.Replace(reg.Host, "127.0.0.1", "127.0.0.1.nip.invalid", 1)
	_, err = c.Resolve(context.Background(), host+"/plugins/textkit:1")
	if err == nil || !strings.Contains(err.Error(), "https://") {
		t.Fatalf("non-loopback registry: %v, want an HTTPS attempt", err)
	}
}

// TestCredentials: a registry that requires a login is reached with flags'
// credentials or a Docker config file's, and refuses anonymous pulls.
func TestCredentials(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t)
	reg.RequireAuth("alice", "s3cret-pass")
	ref := reg.Host + "/plugins/textkit:1"
	if _, err := client(t, oci.Options{}).Push(ctx, ref, ocitest.Textkit(t, "1.0.0")); err == nil || !strings.Contains(err.Error(), "credential not found") {
		t.Fatalf("anonymous push: %v, want it refused for want of a credential", err)
	}
	if _, err := client(t, oci.Options{Username: "alice", Password: "wrong"}).Push(ctx, ref, ocitest.Textkit(t, "1.0.0")); err == nil {
		t.Fatal("wrong password accepted")
	}
	if _, err := client(t, oci.Options{Username: "alice", Password: "s3cret-pass"}).Push(ctx, ref, ocitest.Textkit(t, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(cfg, []byte(`{"auths":{"`+reg.Host+`":{"auth":"YWxpY2U6czNjcmV0LXBhc3M="}}}`), 0o600) // alice:s3cret-pass
	if _, err := client(t, oci.Options{DockerConfig: cfg}).Pull(ctx, ref); err != nil {
		t.Fatalf("pull with the Docker config: %v", err)
	}
}

// TestReadPlugin: a plugin to push is read from its manifest and the
// module beside it, named after it, pinned, within the size limits.
func TestReadPlugin(t *testing.T) {
	p := ocitest.Textkit(t, "1.0.0")
	dir := t.TempDir()
	write := func(man []byte, module []byte) string {
		os.WriteFile(filepath.Join(dir, "textkit.json"), man, 0o644)
		os.WriteFile(filepath.Join(dir, "textkit.wasm"), module, 0o644)
		return filepath.Join(dir, "textkit.json")
	}
	if got, err := oci.ReadPlugin(write(p.Manifest, p.Module)); err != nil || got.ModuleSHA256() != p.ModuleSHA256() {
		t.Fatalf("%v", err)
	}
	cases := map[string]struct {
		man, module []byte
		want        string
	}{
		"module elsewhere": {bytes.Replace(p.Manifest, []byte(`"textkit.wasm"`), []byte(`"lib/textkit.wasm"`), 1), p.Module, "a distributed plugin's module is textkit.wasm"},
		"module changed":   {p.Manifest, append(bytes.Clone(p.Module), 1), "the manifest pins"},
		"not a manifest":   {[]byte(`{"name": "textkit", "bogus": 1}`), p.Module, "bogus"},
	}
	for name, tc := range cases {
		if _, err := oci.ReadPlugin(write(tc.man, tc.module)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	os.Remove(filepath.Join(dir, "textkit.wasm"))
	os.Mkdir(filepath.Join(dir, "textkit.wasm"), 0o755) // not a regular file
	if _, err := oci.ReadPlugin(write(p.Manifest, nil)); err == nil {
		t.Error("a directory read as the module")
	}
}
