package host

import (
	"bytes"
	"compress/flate"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// A continuation is the state a request hands its client in the ID of its
// first client tool call: the tools it discovered and the messages it
// added server-side (the model's calls and their results), so that the
// conversation's next request, which sends the ID back, goes on with them.
// Nothing is kept on the server.
//
// It is sealed with AES-256-GCM (a key derived from
// Options.ContinuationKey): whoever holds the ID reads nothing of it, and
// changes nothing in it. The seal is bound, as additional authenticated
// data, to
//
//   - the tenant the request ran for (Host.Tenant: toolshed serve passes
//     a hash of the API key), so another key replaying the ID restores
//     nothing;
//   - the call's meaning, not its bytes: the function name and the
//     arguments as canonical JSON (keys sorted, no insignificant space,
//     strings and numbers in one spelling), so a client that re-serialises
//     the arguments (compact, keys reordered, \u escapes, 1.0 as 1), as
//     the agent frameworks do, still gets its continuation back; a call
//     with other arguments or another name does not.
//
// The model's own call id is inside the sealed payload and comes back to
// the model on the next request.
const sealPrefix = "call_ts2."

// maxSealedTrail bounds a sealed payload; past it the trail is left out
// (the discoveries stay).
const maxSealedTrail = 32 << 10

// sealContext separates this use of the key from any other.
const sealContext = "toolshed continuation aes-256-gcm v2"

type sealed struct {
	ID         string                         `json:"id"`
	Discovered []string                       `json:"d,omitempty"`
	Trail      []openai.ChatCompletionMessage `json:"t,omitempty"`
}

// newSealer derives the continuation cipher from the configured key.
// cipher.AEAD from crypto/aes is safe for concurrent use.
func newSealer(key []byte) cipher.AEAD {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(sealContext))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// Tenant returns a view of h whose requests run for tenant: the
// continuations they hand out are bound to it and the ones they accept
// must have been made for it. Toolshed serve passes a hash of the
// request's API key; "" is the tenant of a server without keys. The view
// shares everything else with h.
func (h *Host) Tenant(tenant string) *Host {
	return &Host{core: h.core, meter: h.meter, tenant: tenant}
}

// binding is what a continuation is bound to besides its own bytes: the
// tenant and the call's meaning.
func (h *Host) binding(f openai.FunctionCall) []byte {
	t := sha256.Sum256([]byte(h.tenant))
	b := append([]byte(sealContext), 0)
	b = append(b, t[:]...)
	b = append(b, f.Name...)
	b = append(b, 0)
	return append(b, canonicalArgs(f.Arguments)...)
}

// seal returns calls with the first call's ID sealed.
func (h *Host) seal(calls []openai.ToolCall, discovered []string, trail []openai.ChatCompletionMessage) []openai.ToolCall {
	out := slices.Clone(calls)
	p := sealed{ID: calls[0].ID, Discovered: discovered, Trail: trail}
	payload := deflate(p)
	if len(payload) > maxSealedTrail {
		h.log.Warn("continuation trail left out: too large", "bytes", len(payload))
		p.Trail = nil
		payload = deflate(p)
	}
	nonce := make([]byte, h.aead.NonceSize(), h.aead.NonceSize()+len(payload)+h.aead.Overhead())
	rand.Read(nonce)
	box := h.aead.Seal(nonce, nonce, payload, h.binding(calls[0].Function))
	out[0].ID = sealPrefix + base64.RawURLEncoding.EncodeToString(box)
	return out
}

func deflate(v any) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	json.NewEncoder(w).Encode(v)
	w.Close()
	return b.Bytes()
}

// unseal restores the continuations of a conversation: each assistant
// message whose first tool call has a sealed ID that opens gets its trail
// put back before it and its IDs (there and in the tool results) back to
// the model's; the discovered tools are returned, in order. A sealed ID
// that does not open (forged, another tenant's, another call's, another
// key's) is left as it is and restores nothing.
func (h *Host) unseal(in []openai.ChatCompletionMessage) ([]openai.ChatCompletionMessage, []string) {
	var out []openai.ChatCompletionMessage
	var found []string
	ids := map[string]string{}
	for _, m := range in {
		if m.Role == openai.ChatMessageRoleTool && ids[m.ToolCallID] != "" {
			m.ToolCallID = ids[m.ToolCallID]
		}
		if m.Role == openai.ChatMessageRoleAssistant && len(m.ToolCalls) > 0 {
			if p, ok := h.open(m.ToolCalls[0]); ok {
				ids[m.ToolCalls[0].ID] = p.ID
				m.ToolCalls = slices.Clone(m.ToolCalls)
				m.ToolCalls[0].ID = p.ID
				out = append(out, p.Trail...)
				for _, n := range p.Discovered {
					if !slices.Contains(found, n) {
						found = append(found, n)
					}
				}
			}
		}
		out = append(out, m)
	}
	return out, found
}

func (h *Host) open(c openai.ToolCall) (sealed, bool) {
	var p sealed
	enc, ok := strings.CutPrefix(c.ID, sealPrefix)
	if !ok {
		return p, false
	}
	box, err := base64.RawURLEncoding.DecodeString(enc)
	n := h.aead.NonceSize()
	if err != nil || len(box) < n+h.aead.Overhead() {
		h.log.Warn("a sealed tool call id is malformed; ignored")
		return p, false
	}
	payload, err := h.aead.Open(nil, box[:n], box[n:], h.binding(c.Function))
	if err != nil {
		// Forged, or made for another tenant, another call or under
		// another server.continuation_key.
		h.log.Warn("a sealed tool call id did not open (another key's, another call's, or altered); ignored", "tool", c.Function.Name)
		return p, false
	}
	r := flate.NewReader(bytes.NewReader(payload))
	defer r.Close()
	if err := json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(&p); err != nil {
		return p, false
	}
	return p, true
}

// canonicalArgs is a call's arguments as canonical JSON: decoded and
// encoded again with object keys sorted, no insignificant white space,
// strings with one escaping (no HTML escapes) and numbers as float64 in
// Go's shortest form (1.0 and 1e0 are 1, as JavaScript writes them).
// Arguments that are not JSON are taken as they are; empty arguments are
// the empty object, as the host calls them.
func canonicalArgs(args string) []byte {
	if strings.TrimSpace(args) == "" {
		return []byte("{}")
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return []byte(args)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(args)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
