package oci_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/internal/oci"
	"github.com/toolshed/toolshed/internal/oci/ocitest"
)

// TestOrasCLIProduces: the oras CLI, given the command docs/DISTRIBUTION.md
// shows, produces an artifact Toolshed pulls and verifies. Skipped when
// oras is not on PATH (it is no dependency of this module; go install
// oras.land/oras/cmd/oras@v1.3.6 gets it).
func TestOrasCLIProduces(t *testing.T) {
	oras, err := exec.LookPath("oras")
	if err != nil {
		t.Skip("oras is not on PATH")
	}
	reg := ocitest.NewRegistry(t)
	p := ocitest.Textkit(t, "1.0.0")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "textkit.json"), p.Manifest, 0o644)
	os.WriteFile(filepath.Join(dir, "textkit.wasm"), p.Module, 0o644)
	ref := reg.Host + "/plugins/textkit:1.0.0"
	cmd := exec.Command(oras, "push", "--plain-http", ref,
		"--artifact-type", oci.ArtifactType,
		"--annotation", oci.AnnotationName+"=textkit",
		"--annotation", oci.AnnotationVersion+"=1.0.0",
		"--annotation", oci.AnnotationABIVersion+"=1",
		"textkit.json:"+oci.ManifestMediaType,
		"textkit.wasm:"+oci.ModuleMediaType)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oras push: %v\n%s", err, out)
	}
	got, err := client(t, oci.Options{}).Pull(context.Background(), ref)
	if err != nil {
		t.Fatalf("pull of what oras pushed: %v", err)
	}
	if got.Name != "textkit" || got.ModuleSHA256() != p.ModuleSHA256() {
		t.Fatalf("pulled %s %s", got.Name, got.ModuleSHA256())
	}
}
