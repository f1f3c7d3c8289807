package host_test

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"io"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
)

// continued runs a request that discovers slugify, runs it, then calls the
// client tool get_location with args; it returns the request's messages
// and the assistant message the client received.
func continued(t *testing.T, h *host.Host, args string) ([]openai.ChatCompletionMessage, openai.ChatCompletionMessage) {
	t.Helper()
	ask := []openai.ChatCompletionMessage{{Role: "user", Content: `use slugify with {"text":"A_B"} to url-slug then get_location with ` + args}}
	resp, err := h.RunRequest(context.Background(), openai.ChatCompletionRequest{Messages: ask, Tools: []openai.Tool{clientTool("get_location")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ClientCalls) != 1 || !strings.HasPrefix(resp.ClientCalls[0].ID, "call_ts2.") || resp.ClientCalls[0].Function.Arguments != args {
		t.Fatalf("client calls %+v", resp.ClientCalls)
	}
	return ask, openai.ChatCompletionMessage{Role: "assistant", Content: resp.Answer, ToolCalls: resp.ClientCalls}
}

// followUp sends the conversation back with the call's arguments (and
// name) as the client re-wrote them; it reports whether the follow-up's
// first model request carried the discovered slugify, and the messages
// that request had.
func followUp(t *testing.T, h *host.Host, model *scripted, ask []openai.ChatCompletionMessage, call openai.ChatCompletionMessage, name, args string) (bool, int) {
	t.Helper()
	m := call
	m.ToolCalls = slices.Clone(call.ToolCalls)
	m.ToolCalls[0].Function.Name, m.ToolCalls[0].Function.Arguments = name, args
	msgs := append(slices.Clone(ask), m, openai.ChatCompletionMessage{Role: "tool", ToolCallID: m.ToolCalls[0].ID, Content: "Paris"})
	before := len(model.Requests())
	if _, err := h.RunRequest(context.Background(), openai.ChatCompletionRequest{Messages: msgs,
		Tools: []openai.Tool{clientTool("get_location"), clientTool("get_weather")}}, nil); err != nil {
		t.Fatal(err)
	}
	up := model.Requests()[before]
	return slices.Contains(model.ToolsSent()[before], "slugify"), len(up.Messages)
}

// TestContinuationSurvivesReserialisation: agent frameworks send a call's
// arguments back re-serialised (the AI SDK and LangChain compact them,
// Python's json.dumps spaces them and escapes non-ASCII, a JavaScript
// object reorders nothing but writes 1.0 as 1); the continuation is bound
// to what the call means, so every faithful re-writing brings the
// discovered tools and the server-side trail back. Other arguments, another
// name or another tenant bring back nothing.
func TestContinuationSurvivesReserialisation(t *testing.T) {
	model := &scripted{}
	h, _ := newHost(t, model, host.Options{ContinuationKey: []byte("0123456789abcdef0123456789abcdef")})
	a := h.Tenant("key-a")
	const args = `{"who":"me","n":1.0,"s":"é<&","list":[1,{"z":true,"a":null}]}`
	ask, call := continued(t, a, args)

	for _, tc := range []struct {
		name, args string
	}{
		{"as sent", args},
		{"spaced (Python json.dumps)", `{"who": "me", "n": 1.0, "s": "é<&", "list": [1, {"z": true, "a": null}]}`},
		{"reordered keys", `{"list":[1,{"a":null,"z":true}],"s":"é<&","n":1.0,"who":"me"}`},
		{"unicode escapes (ensure_ascii)", `{"who": "me", "n": 1.0, "s": "\u00e9\u003c\u0026", "list": [1, {"z": true, "a": null}]}`},
		{"numbers as JavaScript writes them", `{"who":"me","n":1,"s":"é<&","list":[1,{"z":true,"a":null}]}`},
		{"pretty-printed", "{\n  \"who\": \"me\",\n  \"n\": 1e0,\n  \"s\": \"é<&\",\n  \"list\": [\n    1,\n    {\"z\": true, \"a\": null}\n  ]\n}"},
	} {
		found, n := followUp(t, a, model, ask, call, "get_location", tc.args)
		// system, user, then the restored trail (assistant tool_search,
		// its result, assistant slugify, its result), the client's call
		// and its result.
		if !found || n != 8 {
			t.Errorf("%s: slugify restored %v, %d messages upstream (want 8)", tc.name, found, n)
		}
	}

	for _, tc := range []struct {
		what       string
		h          *host.Host
		name, args string
	}{
		{"another value", a, "get_location", `{"who":"you","n":1,"s":"é<&","list":[1,{"z":true,"a":null}]}`},
		{"a key added", a, "get_location", `{"who":"me","n":1,"s":"é<&","list":[1,{"z":true,"a":null}],"x":1}`},
		{"another tool", a, "get_weather", args},
		{"another API key", h.Tenant("key-b"), "get_location", args},
		{"no API key", h, "get_location", args},
	} {
		if found, n := followUp(t, tc.h, model, ask, call, tc.name, tc.args); found || n != 4 {
			t.Errorf("%s: restored slugify %v, %d messages upstream (want nothing restored: 4)", tc.what, found, n)
		}
	}

	// The same key on another Host (a replica sharing the key) opens it.
	model2 := &scripted{}
	h2, _ := newHost(t, model2, host.Options{ContinuationKey: []byte("0123456789abcdef0123456789abcdef")})
	if found, _ := followUp(t, h2.Tenant("key-a"), model2, ask, call, "get_location", args); !found {
		t.Error("a replica with the same key restored nothing")
	}
}

// TestContinuationRevealsNothing: the id is ciphertext. Neither it nor its
// base64 decoding, nor an inflate of that, shows the discovered tool, the
// trail's text or the model's call id; two seals of the same state differ.
func TestContinuationRevealsNothing(t *testing.T) {
	model := &scripted{}
	h, _ := newHost(t, model, host.Options{})
	_, call1 := continued(t, h.Tenant("k"), `{}`)
	_, call2 := continued(t, h.Tenant("k"), `{}`)
	id1, id2 := call1.ToolCalls[0].ID, call2.ToolCalls[0].ID
	if id1 == id2 {
		t.Fatal("two continuations of the same state have the same id")
	}
	box, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id1, "call_ts2."))
	if err != nil {
		t.Fatal(err)
	}
	inflated, _ := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(box)), 1<<20))
	for _, secret := range []string{"slugify", "a-b", "tool_search", "url-slug"} {
		for _, b := range [][]byte{[]byte(id1), box, inflated, box[12:]} {
			if bytes.Contains(b, []byte(secret)) {
				t.Fatalf("the id shows %q", secret)
			}
		}
	}
	// Any one byte changed: nothing restored.
	for _, i := range []int{0, 12, len(box) / 2, len(box) - 1} {
		bad := bytes.Clone(box)
		bad[i] ^= 0x20
		forged := call1
		forged.ToolCalls = slices.Clone(call1.ToolCalls)
		forged.ToolCalls[0].ID = "call_ts2." + base64.RawURLEncoding.EncodeToString(bad)
		ask := []openai.ChatCompletionMessage{{Role: "user", Content: `use slugify with {"text":"A_B"} to url-slug then get_location with {}`}}
		if found, n := followUp(t, h.Tenant("k"), model, ask, forged, "get_location", `{}`); found || n != 4 {
			t.Errorf("byte %d changed: restored %v, %d messages", i, found, n)
		}
	}
}
