package openaiapi

import (
	"encoding/json"
	"testing"
)

// FuzzResponsesRequest: any body that decodes as a Responses request is
// turned into a chat completion request or refused with a field error,
// never a panic; what it makes has messages, and every refusal names its
// field.
func FuzzResponsesRequest(f *testing.F) {
	for _, seed := range []string{
		`{"input":"hi"}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]}]}`,
		`{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}]}`,
		`{"input":[{"role":"assistant","content":"a"},{"type":"function_call","call_id":"c","name":"f"}],"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`,
		`{"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"instructions":[{"type":"input_text","text":"be"}]}`,
		`{"input":[{"type":"reasoning","id":"r"},{"type":"item_reference","id":"m"}],"background":true}`,
		`{"input":[{"role":"developer","content":null}],"tools":[{"type":"web_search"}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var rr responsesRequest
		if json.Unmarshal([]byte(body), &rr) != nil {
			return
		}
		req, convo, err := rr.chatRequest(nil)
		if err != nil {
			var fe *fieldError
			if e, ok := err.(*fieldError); ok {
				fe = e
			}
			if fe == nil || fe.param == "" || fe.msg == "" {
				t.Fatalf("%s: a refusal without its field: %v", body, err)
			}
			return
		}
		if len(req.Messages) == 0 || len(convo) == 0 {
			t.Fatalf("%s: accepted with no messages", body)
		}
	})
}
