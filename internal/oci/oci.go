// Package oci distributes Toolshed plugins through OCI registries (Docker
// Hub, GHCR, ECR, Harbor, zot, distribution): a plugin is an OCI artifact
// whose two layers are its manifest and its WebAssembly module, with media
// types and an artifact type of its own (docs/DISTRIBUTION.md).
//
// The registry protocol, authentication and content verification are
// oras-go's; this package adds the format, the checks a pulled plugin must
// pass before a byte of it reaches the plugin folder (layer digests,
// sizes, the manifest's strict decoding and its sha256 pin against the
// module), atomic writes into the folder, and a Syncer that keeps a folder
// in step with a list of references.
package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/config"
)

// The artifact format (docs/DISTRIBUTION.md).
const (
	// ArtifactType is the OCI image manifest's artifactType.
	ArtifactType = "application/vnd.toolshed.plugin.v1"
	// ManifestMediaType is the first layer: the plugin manifest, as JSON.
	ManifestMediaType = "application/vnd.toolshed.plugin.manifest.v1+json"
	// ModuleMediaType is the second layer: the WebAssembly module.
	ModuleMediaType = "application/vnd.toolshed.plugin.module.v1+wasm"

	// Annotations of the OCI manifest, copied from the plugin manifest so a
	// registry's UI and `oras manifest fetch` show what the artifact is.
	AnnotationName       = "dev.toolshed.plugin.name"
	AnnotationVersion    = "dev.toolshed.plugin.version"
	AnnotationABIVersion = "dev.toolshed.plugin.abi_version"
)

// Size limits of what a pull reads, checked on the descriptors before any
// content is fetched.
const (
	// MaxOCIManifestBytes bounds the OCI manifest (two layers and a few
	// annotations are under 2 KiB).
	MaxOCIManifestBytes = 64 << 10
	// MaxModuleBytes bounds the module layer (the catalog's own bound).
	MaxModuleBytes = 128 << 20
)

// Plugin is one plugin as the artifact carries it: the manifest's exact
// bytes and the module's.
type Plugin struct {
	Name       string
	Version    string
	ABIVersion int
	Manifest   []byte // the manifest file, byte for byte
	Module     []byte
	// Digest is the OCI manifest's digest ("sha256:..."): set by Pull and
	// Push.
	Digest string
}

// ManifestFile is the file name the manifest is written under: NAME.json.
func (p *Plugin) ManifestFile() string { return p.Name + ".json" }

// ModuleFile is the file name the module is written under: NAME.wasm.
func (p *Plugin) ModuleFile() string { return p.Name + ".wasm" }

// ManifestSHA256 is the hex sha256 of the manifest file.
func (p *Plugin) ManifestSHA256() string { return sha256Hex(p.Manifest) }

// ModuleSHA256 is the hex sha256 of the module.
func (p *Plugin) ModuleSHA256() string { return sha256Hex(p.Module) }

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// NewPlugin checks a manifest and its module as a distributable plugin:
// the manifest decodes strictly and validates, names its module NAME.wasm
// (a pulled plugin owns exactly two files, named after it), and its sha256
// pin is the module's.
func NewPlugin(manifestJSON, module []byte) (*Plugin, error) {
	m, err := manifest.Decode(manifestJSON)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if m.Wasm != m.Name+".wasm" {
		return nil, fmt.Errorf("plugin %q: the manifest's wasm is %q; a distributed plugin's module is %s.wasm", m.Name, m.Wasm, m.Name)
	}
	if len(module) > MaxModuleBytes {
		return nil, fmt.Errorf("plugin %q: module of %d bytes is larger than %d", m.Name, len(module), MaxModuleBytes)
	}
	if got := sha256Hex(module); got != m.SHA256 {
		return nil, fmt.Errorf("plugin %q: the module has sha256 %s, the manifest pins %s", m.Name, got, m.SHA256)
	}
	return &Plugin{Name: m.Name, Version: m.Version, ABIVersion: m.ABIVersion, Manifest: manifestJSON, Module: module}, nil
}

// ReadPlugin reads a manifest file and the module it names (beside it)
// and checks them with NewPlugin.
func ReadPlugin(manifestPath string) (*Plugin, error) {
	data, err := readRegular(manifestPath, manifest.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, err)
	}
	if m.Wasm != m.Name+".wasm" {
		return nil, fmt.Errorf("%s: the manifest's wasm is %q; a distributed plugin's module is %s.wasm, beside it", manifestPath, m.Wasm, m.Name)
	}
	module, err := readRegular(filepath.Join(filepath.Dir(manifestPath), m.Wasm), MaxModuleBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, err)
	}
	p, err := NewPlugin(data, module)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, err)
	}
	return p, nil
}

// readRegular reads a regular file (never blocking on a FIFO or device)
// of at most max bytes.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := manifest.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}

// Options configure a Client. The zero value is usable: Docker's
// credentials, HTTPS except to loopback registries.
type Options struct {
	// PlainHTTP allows plain HTTP to any registry. Without it only a
	// loopback registry (localhost, 127.0.0.0/8, ::1) is spoken to over
	// HTTP; every other one over HTTPS.
	PlainHTTP bool
	// Username and Password, when Username is set, are used for every
	// registry instead of the Docker configuration. A Username of
	// "<token>" sends Password as an identity (refresh) token, as Docker
	// does.
	Username, Password string
	// DockerConfig is the Docker configuration file holding credentials
	// (and credential helpers); "" is $DOCKER_CONFIG/config.json, else
	// ~/.docker/config.json. A missing file means anonymous access.
	DockerConfig string
	// HTTPClient carries the requests; nil is oras-go's retrying client.
	HTTPClient *http.Client
}

// Client talks to OCI registries. It is safe for concurrent use.
type Client struct {
	opts  Options
	auth  *auth.Client
	creds credentials.Store
}

// NewClient makes a Client. The Docker configuration is read here (an
// unreadable or malformed file is an error).
func NewClient(opts Options) (*Client, error) {
	c := &Client{opts: opts}
	if opts.Username == "" {
		var store *credentials.DynamicStore
		var err error
		if opts.DockerConfig != "" {
			store, err = credentials.NewStore(opts.DockerConfig, credentials.StoreOptions{})
		} else {
			store, err = credentials.NewStoreFromDocker(credentials.StoreOptions{})
		}
		if err != nil {
			return nil, fmt.Errorf("registry credentials: %w", err)
		}
		c.creds = store
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = retry.DefaultClient
	}
	c.auth = &auth.Client{Client: hc, Cache: auth.NewCache(), Credential: c.credential}
	c.auth.SetUserAgent("toolshed")
	return c, nil
}

func (c *Client) credential(ctx context.Context, hostport string) (auth.Credential, error) {
	if c.opts.Username != "" {
		if c.opts.Username == "<token>" {
			return auth.Credential{RefreshToken: c.opts.Password}, nil
		}
		return auth.Credential{Username: c.opts.Username, Password: c.opts.Password}, nil
	}
	return credentials.Credential(c.creds)(ctx, hostport)
}

// Reference is a parsed plugin reference: REGISTRY/REPOSITORY:TAG or
// REGISTRY/REPOSITORY@sha256:DIGEST.
type Reference struct {
	registry.Reference
}

// ParseReference parses a reference. It must name a tag or a digest.
func ParseReference(ref string) (Reference, error) {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return Reference{}, fmt.Errorf("reference %q: %w", ref, err)
	}
	if r.Reference == "" {
		return Reference{}, fmt.Errorf("reference %q: name a tag (REPO:TAG) or a digest (REPO@sha256:...)", ref)
	}
	return Reference{r}, nil
}

// Pinned reports whether the reference is a digest (immutable), not a tag.
func (r Reference) Pinned() bool { return r.ValidateReferenceAsDigest() == nil }

// repository parses a reference and opens its repository.
func (c *Client) repository(ref string) (Reference, *remote.Repository, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return r, nil, err
	}
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return r, nil, err
	}
	repo.Client = c.auth
	repo.PlainHTTP = c.opts.PlainHTTP || config.IsLoopback(r.Registry)
	repo.SkipReferrersGC = true
	return r, repo, nil
}

// Push uploads a plugin (blobs the registry has already are not sent
// again) and tags it, or, for a digest reference, checks that the digest
// is the artifact's. It returns the OCI manifest's digest. The same plugin
// always packs to the same digest: the OCI manifest carries no time stamp.
func (c *Client) Push(ctx context.Context, ref string, p *Plugin) (string, error) {
	r, repo, err := c.repository(ref)
	if err != nil {
		return "", err
	}
	if _, err := NewPlugin(p.Manifest, p.Module); err != nil {
		return "", err
	}
	man, blobs := pack(p)
	for _, b := range blobs {
		if err := pushBlob(ctx, repo, b.desc, b.data); err != nil {
			return "", fmt.Errorf("push %s: %w", ref, err)
		}
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, man)
	desc.ArtifactType = ArtifactType
	if r.Pinned() {
		if desc.Digest.String() != r.Reference.Reference {
			return "", fmt.Errorf("push %s: the artifact's digest is %s", ref, desc.Digest)
		}
		err = repo.Manifests().Push(ctx, desc, bytes.NewReader(man))
	} else {
		err = repo.Manifests().PushReference(ctx, desc, bytes.NewReader(man), r.Reference.Reference)
	}
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	p.Digest = desc.Digest.String()
	return p.Digest, nil
}

type blob struct {
	desc ocispec.Descriptor
	data []byte
}

// pack builds the OCI manifest of a plugin and the blobs it names.
func pack(p *Plugin) ([]byte, []blob) {
	cfg := ocispec.DescriptorEmptyJSON
	manDesc := content.NewDescriptorFromBytes(ManifestMediaType, p.Manifest)
	manDesc.Annotations = map[string]string{ocispec.AnnotationTitle: p.ManifestFile()}
	modDesc := content.NewDescriptorFromBytes(ModuleMediaType, p.Module)
	modDesc.Annotations = map[string]string{ocispec.AnnotationTitle: p.ModuleFile()}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       cfg,
		Layers:       []ocispec.Descriptor{manDesc, modDesc},
		Annotations: map[string]string{
			AnnotationName:            p.Name,
			AnnotationVersion:         p.Version,
			AnnotationABIVersion:      strconv.Itoa(p.ABIVersion),
			ocispec.AnnotationTitle:   p.Name,
			ocispec.AnnotationVersion: p.Version,
		},
	}
	b, _ := json.Marshal(m)
	return b, []blob{{cfg, ocispec.DescriptorEmptyJSON.Data}, {manDesc, p.Manifest}, {modDesc, p.Module}}
}

func pushBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, data []byte) error {
	desc.Data = nil
	ok, err := repo.Exists(ctx, desc)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	return repo.Push(ctx, desc, bytes.NewReader(data))
}

// Resolve returns the digest a reference names now (for a tag, the
// registry's answer; for a digest, itself once the registry has it).
func (c *Client) Resolve(ctx context.Context, ref string) (string, error) {
	r, repo, err := c.repository(ref)
	if err != nil {
		return "", err
	}
	desc, err := repo.Resolve(ctx, r.Reference.Reference)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", ref, err)
	}
	return desc.Digest.String(), nil
}

// VerifyError is a pulled artifact that failed a check: it is not a
// Toolshed plugin, a layer's content does not match its digest, or the
// manifest's sha256 pin is not the module's.
type VerifyError struct {
	Ref string
	Err error
}

func (e *VerifyError) Error() string { return fmt.Sprintf("pull %s: refused: %v", e.Ref, e.Err) }
func (e *VerifyError) Unwrap() error { return e.Err }

// Pull fetches and verifies a plugin: the OCI manifest is an image
// manifest of ArtifactType with exactly the two layers of their media
// types, within the size limits; every byte fetched matches its
// descriptor's digest and size (a tag's manifest included); the plugin
// manifest decodes strictly, names NAME.wasm, agrees with the annotations,
// and pins the module's sha256. Nothing is written anywhere.
func (c *Client) Pull(ctx context.Context, ref string) (*Plugin, error) {
	r, repo, err := c.repository(ref)
	if err != nil {
		return nil, err
	}
	desc, err := repo.Resolve(ctx, r.Reference.Reference)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	refused := func(format string, args ...any) error {
		return &VerifyError{Ref: ref, Err: fmt.Errorf(format, args...)}
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, refused("media type %q is not an OCI image manifest (%s)", desc.MediaType, ocispec.MediaTypeImageManifest)
	}
	if desc.Size > MaxOCIManifestBytes {
		return nil, refused("OCI manifest of %d bytes is larger than %d", desc.Size, MaxOCIManifestBytes)
	}
	raw, err := fetch(ctx, repo.Manifests(), desc)
	if err != nil {
		return nil, fetchError(ref, "the OCI manifest", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, refused("OCI manifest: %v", err)
	}
	if m.ArtifactType != ArtifactType {
		return nil, refused("artifact type %q is not a Toolshed plugin (%s)", m.ArtifactType, ArtifactType)
	}
	if len(m.Layers) != 2 || m.Layers[0].MediaType != ManifestMediaType || m.Layers[1].MediaType != ModuleMediaType {
		var types []string
		for _, l := range m.Layers {
			types = append(types, l.MediaType)
		}
		return nil, refused("layers [%s]: want [%s %s]", strings.Join(types, " "), ManifestMediaType, ModuleMediaType)
	}
	if m.Layers[0].Size > manifest.MaxFileBytes {
		return nil, refused("manifest layer of %d bytes is larger than %d", m.Layers[0].Size, manifest.MaxFileBytes)
	}
	if m.Layers[1].Size > MaxModuleBytes {
		return nil, refused("module layer of %d bytes is larger than %d", m.Layers[1].Size, MaxModuleBytes)
	}
	for _, l := range m.Layers {
		if l.Digest.Algorithm() != digest.SHA256 {
			return nil, refused("layer digest %s: want sha256", l.Digest)
		}
	}
	manJSON, err := fetch(ctx, repo.Blobs(), m.Layers[0])
	if err != nil {
		return nil, fetchError(ref, "the manifest layer", err)
	}
	module, err := fetch(ctx, repo.Blobs(), m.Layers[1])
	if err != nil {
		return nil, fetchError(ref, "the module layer", err)
	}
	p, err := NewPlugin(manJSON, module)
	if err != nil {
		return nil, refused("%v", err)
	}
	want := map[string]string{AnnotationName: p.Name, AnnotationVersion: p.Version, AnnotationABIVersion: strconv.Itoa(p.ABIVersion)}
	for _, k := range []string{AnnotationName, AnnotationVersion, AnnotationABIVersion} {
		if got, ok := m.Annotations[k]; ok && got != want[k] {
			return nil, refused("annotation %s is %q, the manifest says %q", k, got, want[k])
		}
	}
	p.Digest = desc.Digest.String()
	return p, nil
}

// fetch reads one piece of content, verified against its descriptor's
// size and digest.
func fetch(ctx context.Context, f content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	rc, err := f.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return content.ReadAll(rc, desc)
}

// fetchError tells a verification failure (content that does not match
// its digest or size: refused) from a transport one.
func fetchError(ref, what string, err error) error {
	if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) ||
		errors.Is(err, content.ErrInvalidDescriptorSize) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &VerifyError{Ref: ref, Err: fmt.Errorf("%s: %w", what, err)}
	}
	return fmt.Errorf("pull %s: %s: %w", ref, what, err)
}
