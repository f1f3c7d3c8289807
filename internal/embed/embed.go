// Package embed turns texts into unit vectors through an OpenAI-compatible
// embeddings endpoint (POST {base}/embeddings), and ranks a catalog's
// vectors against a request's: the semantic stage of tool_search's
// candidate list, which reaches tools that share no word with a request.
//
// Everything an endpoint answers is checked before it is used: one vector
// per input, all of one dimension, finite and not zero; a body larger than
// MaxResponseBytes is cut off with an error. A failed call returns an
// error and caches nothing.
//
// Concurrency: a Client and a Vectors are safe for concurrent use; a
// Vectors is immutable once made.
package embed

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/internal/topk"
)

// Defaults for a Client's zero fields.
const (
	DefaultBatch            = 128
	DefaultMaxResponseBytes = 64 << 20
	// DefaultCacheEntries bounds a Client's cache of vectors (texts of
	// tools and of queries alike; 512 MB at 1,024 dimensions, which is
	// why search.embeddings.dimensions matters for large catalogs): a
	// reload of a catalog of 100,000 tools re-embeds only what changed,
	// as long as fewer than 31,000 other texts came since.
	DefaultCacheEntries = 131072
)

// Client embeds texts through one endpoint and model. Vectors are cached
// by model and text, so a catalog reloaded with few changes costs few
// calls; the cache forgets its oldest entries past CacheEntries.
type Client struct {
	// BaseURL is the API's base, e.g. https://api.openai.com/v1; Model
	// names the embedding model; Key is sent as a bearer token when set.
	BaseURL, Model, Key string
	// Dimensions asks the model for vectors of this length (models that
	// can shorten theirs, such as OpenAI's text-embedding-3; 0: the
	// model's own).
	Dimensions int
	// Batch is how many texts one call sends (DefaultBatch when 0).
	Batch int
	// MaxResponseBytes bounds one answer's body (DefaultMaxResponseBytes
	// when 0).
	MaxResponseBytes int64
	// CacheEntries bounds the cache (DefaultCacheEntries when 0; -1: no
	// cache).
	CacheEntries int
	// CallTimeout bounds one call (one batch) whatever the caller's
	// deadline, so that a stalled endpoint is asked again, not waited for
	// (DefaultCallTimeout when 0).
	CallTimeout time.Duration
	// HTTPClient makes the calls (http.DefaultClient's transport when
	// nil); deadlines come from the context.
	HTTPClient *http.Client

	once  sync.Once
	api   *openai.Client
	mu    sync.Mutex
	cache map[[32]byte][]float32
	order [][32]byte // cache keys, oldest first
}

func (c *Client) init() {
	c.once.Do(func() {
		cfg := openai.DefaultConfig(c.Key)
		cfg.BaseURL = c.BaseURL
		hc := c.HTTPClient
		if hc == nil {
			hc = &http.Client{}
		}
		limit := c.MaxResponseBytes
		if limit <= 0 {
			limit = DefaultMaxResponseBytes
		}
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		bounded := *hc
		bounded.Transport = limitTransport{rt, limit}
		cfg.HTTPClient = &bounded
		c.api = openai.NewClientWithConfig(cfg)
		c.cache = map[[32]byte][]float32{}
	})
}

// ErrTooLarge is returned when an answer's body passes MaxResponseBytes.
var ErrTooLarge = errors.New("embed: the endpoint's answer is too large")

type limitTransport struct {
	rt    http.RoundTripper
	limit int64
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitBody{ReadCloser: resp.Body, left: t.limit}
	return resp, nil
}

type limitBody struct {
	io.ReadCloser
	left int64
}

func (b *limitBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body that ends exactly at the limit
		// from one that goes on.
		var one [1]byte
		if n, _ := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, ErrTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func (c *Client) key(text string) [32]byte {
	return sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", c.Model, c.Dimensions, text)))
}

// Embed returns one unit vector per text, in order. Texts already cached
// cost nothing; the rest go to the endpoint Batch at a time.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.init()
	out := make([][]float32, len(texts))
	var todo []int
	c.mu.Lock()
	for i, t := range texts {
		if v, ok := c.cache[c.key(t)]; ok {
			out[i] = v
		} else {
			todo = append(todo, i)
		}
	}
	c.mu.Unlock()
	batch := c.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	dim := 0
	for _, v := range out {
		if v != nil {
			dim = len(v)
			break
		}
	}
	for start := 0; start < len(todo); start += batch {
		idx := todo[start:min(start+batch, len(todo))]
		in := make([]string, len(idx))
		for j, i := range idx {
			in[j] = texts[i]
			if in[j] == "" {
				in[j] = " " // some endpoints refuse an empty input
			}
		}
		vecs, err := c.callRetrying(ctx, in)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			if dim == 0 {
				dim = len(vecs[j])
			}
			if len(vecs[j]) != dim {
				// Cached vectors of another dimension: the model behind
				// the endpoint changed. Forget them all, so the next
				// call starts afresh.
				c.Forget()
				return nil, fmt.Errorf("embed: %s answered vectors of %d and %d dimensions (the cache is cleared: did the model change?)", c.Model, dim, len(vecs[j]))
			}
			out[i] = vecs[j]
		}
		c.remember(texts, idx, vecs)
	}
	return out, nil
}

// Forget empties the cache (a model changed behind the endpoint).
func (c *Client) Forget() {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cache, c.order = map[[32]byte][]float32{}, nil
}

func (c *Client) remember(texts []string, idx []int, vecs [][]float32) {
	limit := c.CacheEntries
	if limit == 0 {
		limit = DefaultCacheEntries
	}
	if limit < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, i := range idx {
		k := c.key(texts[i])
		if _, ok := c.cache[k]; ok {
			continue
		}
		c.cache[k] = vecs[j]
		c.order = append(c.order, k)
	}
	for len(c.order) > limit {
		delete(c.cache, c.order[0])
		c.order = c.order[1:]
	}
}

// DefaultCallTimeout bounds one call (one batch) when a Client's
// CallTimeout is 0.
const DefaultCallTimeout = 2 * time.Minute

var errStalled = errors.New("embed: the endpoint stalled")

// Retries is how many times a batch is sent again after a failure that
// may pass (the connection dropped, 429, 5xx), after 0.2 s, then 0.8 s.
const Retries = 2

// callRetrying is call, again after a failure that may pass. An answer
// that is wrong (a 4xx, a malformed body) is not asked again.
func (c *Client) callRetrying(ctx context.Context, in []string) ([][]float32, error) {
	wait := 200 * time.Millisecond
	limit := c.CallTimeout
	if limit <= 0 {
		limit = DefaultCallTimeout
	}
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, limit)
		vecs, err := c.call(cctx, in)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (no answer within %s)", errStalled, limit)
		}
		if err == nil || attempt == Retries || !transient(err) {
			return vecs, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait *= 4
	}
}

// transient reports whether a call's failure may pass: the endpoint
// said so (429, 5xx) or the connection failed.
func transient(err error) bool {
	var api *openai.APIError
	if errors.As(err, &api) {
		return api.HTTPStatusCode == http.StatusTooManyRequests || api.HTTPStatusCode >= 500
	}
	var req *openai.RequestError
	if errors.As(err, &req) {
		return req.HTTPStatusCode == http.StatusTooManyRequests || req.HTTPStatusCode >= 500
	}
	if errors.Is(err, errStalled) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTooLarge) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// call sends one batch and checks the answer.
func (c *Client) call(ctx context.Context, in []string) ([][]float32, error) {
	resp, err := c.api.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: in, Model: openai.EmbeddingModel(c.Model), Dimensions: c.Dimensions})
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", c.Model, err)
	}
	if len(resp.Data) != len(in) {
		return nil, fmt.Errorf("embed: %s answered %d vectors for %d texts", c.Model, len(resp.Data), len(in))
	}
	out := make([][]float32, len(in))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(in) || out[d.Index] != nil {
			return nil, fmt.Errorf("embed: %s answered a vector with index %d for %d texts (missing or repeated)", c.Model, d.Index, len(in))
		}
		v, err := unit(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("embed: %s, text %d: %w", c.Model, d.Index, err)
		}
		out[d.Index] = v
	}
	dim := len(out[0])
	for _, v := range out {
		if len(v) != dim {
			return nil, fmt.Errorf("embed: %s answered vectors of %d and %d dimensions", c.Model, dim, len(v))
		}
	}
	return out, nil
}

// MaxDimensions bounds a vector's length (the largest common models have
// 3,072).
const MaxDimensions = 16384

// unit checks a vector and scales it to length 1.
func unit(v []float32) ([]float32, error) {
	if len(v) == 0 || len(v) > MaxDimensions {
		return nil, fmt.Errorf("a vector of %d dimensions (want 1 to %d)", len(v), MaxDimensions)
	}
	var ss float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("a vector with a value that is not a finite number")
		}
		ss += f * f
	}
	if ss == 0 || math.IsInf(ss, 0) {
		return nil, errors.New("a vector of length zero")
	}
	n := float32(1 / math.Sqrt(ss))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * n
	}
	return out, nil
}

// Vectors is a catalog's vectors, one per name, in one flat array.
type Vectors struct {
	names []string
	dim   int
	data  []float32
}

// NewVectors makes a Vectors of names and their vectors (all of one
// dimension, finite and not zero; they are scaled to length 1).
func NewVectors(names []string, vecs [][]float32) (*Vectors, error) {
	if len(names) != len(vecs) {
		return nil, fmt.Errorf("embed: %d names and %d vectors", len(names), len(vecs))
	}
	v := &Vectors{names: names}
	if len(vecs) == 0 {
		return v, nil
	}
	v.dim = len(vecs[0])
	v.data = make([]float32, 0, v.dim*len(vecs))
	for i, x := range vecs {
		if len(x) != v.dim {
			return nil, fmt.Errorf("embed: vector %d has %d dimensions, not %d", i, len(x), v.dim)
		}
		u, err := unit(x)
		if err != nil {
			return nil, fmt.Errorf("embed: vector %d: %w", i, err)
		}
		v.data = append(v.data, u...)
	}
	return v, nil
}

// Len is the number of vectors.
func (v *Vectors) Len() int { return len(v.names) }

// At is the i-th vector (length 1; not to be modified).
func (v *Vectors) At(i int) []float32 { return v.data[i*v.dim : (i+1)*v.dim : (i+1)*v.dim] }

// Dim is the vectors' dimension (0 when there are none).
func (v *Vectors) Dim() int { return v.dim }

// Rank returns the names of the k vectors nearest to q by cosine, nearest
// first; ties go to the earlier name. A q of another dimension, or not
// finite, or zero, ranks nothing.
func (v *Vectors) Rank(q []float32, k int) []string {
	if v == nil || len(q) != v.dim || k <= 0 || v.dim == 0 {
		return nil
	}
	if _, err := unit(q); err != nil {
		return nil
	}
	type hit struct {
		i int
		s float32
	}
	better := func(a, b hit) bool { return a.s > b.s || (a.s == b.s && a.i < b.i) }
	best := make([]hit, 0, min(k, len(v.names))+1)
	for i := range v.names {
		best = topk.Insert(best, hit{i, dot(v.data[i*v.dim:(i+1)*v.dim], q)}, k, better)
	}
	out := make([]string, len(best))
	for i, h := range best {
		out[i] = v.names[h.i]
	}
	return out
}

// dot is a·b (len(a) == len(b)), in four running sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// MaxTextRunes bounds the text embedded for one tool: a description's
// first sentences carry most of its meaning (about 50 words fit), and an
// endpoint's cost grows with the length.
const MaxTextRunes = 300

// ToolText is what is embedded for a tool: its name's words (an
// identifier cut at _ - . / and lower-to-upper case changes), a colon,
// its description, at most MaxTextRunes runes in all.
func ToolText(name, description string) string {
	var b strings.Builder
	var prev rune
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/' || r == ':':
			r = ' '
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	s := strings.Join(strings.Fields(b.String()), " ") + ": " + strings.Join(strings.Fields(description), " ")
	if r := []rune(s); len(r) > MaxTextRunes {
		s = string(r[:MaxTextRunes])
	}
	return s
}
