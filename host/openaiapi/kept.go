package openaiapi

import (
	"crypto/subtle"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// kept holds the conversations of the responses made with store (the
// default) when the server keeps responses (Options.KeepResponses), for
// previous_response_id: the messages up to and including the response's
// own, under its id and its tenant. At most max are kept, each for at
// most ttl; the oldest goes first. Memory only: a restart, or another
// replica, knows none of them. Safe for concurrent use.
type kept struct {
	max int
	ttl time.Duration

	mu    sync.Mutex
	byID  map[string]keptResponse
	order []string // ids, oldest first
}

type keptResponse struct {
	tenant string
	msgs   []openai.ChatCompletionMessage
	at     time.Time
}

func newKept(max int, ttl time.Duration) *kept {
	return &kept{max: max, ttl: ttl, byID: map[string]keptResponse{}}
}

// get returns the conversation of response id, if tenant made it and it
// is still kept.
func (k *kept) get(tenant, id string) ([]openai.ChatCompletionMessage, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.byID[id]
	if !ok || subtle.ConstantTimeCompare([]byte(r.tenant), []byte(tenant)) != 1 || time.Since(r.at) > k.ttl {
		return nil, false
	}
	return r.msgs, true
}

// put keeps a response's conversation, dropping the oldest past max and
// whatever is past ttl.
func (k *kept) put(tenant, id string, msgs []openai.ChatCompletionMessage) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.byID[id] = keptResponse{tenant: tenant, msgs: msgs, at: time.Now()}
	k.order = append(k.order, id)
	for len(k.order) > 0 && (len(k.order) > k.max || time.Since(k.byID[k.order[0]].at) > k.ttl) {
		delete(k.byID, k.order[0])
		k.order = k.order[1:]
	}
}
