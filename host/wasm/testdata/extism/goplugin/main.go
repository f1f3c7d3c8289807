// Command goplugin is an Extism plugin written in Go against the
// extism:host/env imports directly (no PDK): one export per function of
// the ABI the host's tests exercise, well-behaved and hostile.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(uint64) uint32

//go:wasmimport extism:host/env input_offset
func inputOffset() uint64

//go:wasmimport extism:host/env alloc
func alloc(uint64) uint64

//go:wasmimport extism:host/env free
func free(uint64)

//go:wasmimport extism:host/env length
func length(uint64) uint64

//go:wasmimport extism:host/env load_u8
func loadU8(uint64) uint32

//go:wasmimport extism:host/env store_u8
func storeU8(uint64, uint32)

//go:wasmimport extism:host/env output_set
func outputSet(uint64, uint64)

//go:wasmimport extism:host/env error_set
func errorSet(uint64)

//go:wasmimport extism:host/env var_get
func varGet(uint64) uint64

//go:wasmimport extism:host/env var_set
func varSet(uint64, uint64)

//go:wasmimport extism:host/env config_get
func configGet(uint64) uint64

//go:wasmimport extism:host/env http_request
func httpRequest(uint64, uint64) uint64

//go:wasmimport extism:host/env http_status_code
func httpStatusCode() int32

//go:wasmimport extism:host/env log_info
func logInfo(uint64)

// input reads the call's input.
func input() []byte {
	b := make([]byte, inputLength())
	for i := range b {
		b[i] = byte(inputLoadU8(uint64(i)))
	}
	return b
}

// put stores b in a new block.
func put(b []byte) uint64 {
	p := alloc(uint64(len(b)))
	for i, c := range b {
		storeU8(p+uint64(i), uint32(c))
	}
	return p
}

// get reads the block at p.
func get(p uint64) []byte {
	b := make([]byte, length(p))
	for i := range b {
		b[i] = byte(loadU8(p + uint64(i)))
	}
	return b
}

func output(s string) int32 {
	outputSet(put([]byte(s)), uint64(len(s)))
	return 0
}

func fail(msg string) int32 {
	errorSet(put([]byte(msg)))
	return 1
}

func num() int {
	n, _ := strconv.Atoi(strings.TrimSpace(string(input())))
	return n
}

//go:wasmexport greet
func greet() int32 { return output("Hello, " + string(input()) + "!") }

// counter adds one to the var "n" and outputs it.
//
//go:wasmexport counter
func counter() int32 {
	n := 0
	if p := varGet(put([]byte("n"))); p != 0 {
		n, _ = strconv.Atoi(string(get(p)))
	}
	n++
	varSet(put([]byte("n")), put([]byte(strconv.Itoa(n))))
	return output(strconv.Itoa(n))
}

// config outputs the config value named by the input.
//
//go:wasmexport config
func config() int32 {
	p := configGet(put(input()))
	if p == 0 {
		return output("<unset>")
	}
	return output(string(get(p)))
}

// fetch GETs the URL of the input: "STATUS BODY".
//
//go:wasmexport fetch
func fetch() int32 {
	req := `{"url": "` + string(input()) + `", "method": "GET", "headers": {"x-test": "1"}}`
	body := httpRequest(put([]byte(req)), 0)
	var b []byte
	if body != 0 {
		b = get(body)
	}
	return output(strconv.Itoa(int(httpStatusCode())) + " " + string(b))
}

//go:wasmexport sleep
func sleep() int32 {
	time.Sleep(time.Hour)
	return output("woke up")
}

// storm allocates blocks of the input's size, never freed, forever.
//
//go:wasmexport storm
func storm() int32 {
	n := uint64(num())
	for {
		alloc(n)
	}
}

// churn allocates and frees a block of the input's size many times: the
// memory held stays one block.
//
//go:wasmexport churn
func churn() int32 {
	n := uint64(num())
	for range 100_000 {
		free(alloc(n))
	}
	return output("churned")
}

// holdThenGrow holds blocks of the input's MiB, then grows its own
// linear memory by as much again.
//
//go:wasmexport hold_then_grow
func holdThenGrow() int32 {
	n := num()
	for range n {
		alloc(1 << 20)
	}
	var keep [][]byte
	for range n + 2 {
		keep = append(keep, make([]byte, 1<<20))
	}
	return output("grew " + strconv.Itoa(len(keep)))
}

// logs writes the input's number of log lines.
//
//go:wasmexport logs
func logs() int32 {
	for i := range num() {
		logInfo(put([]byte("line " + strconv.Itoa(i))))
	}
	return output("logged")
}

// oob reads one byte past the end of a block.
//
//go:wasmexport oob
func oob() int32 {
	p := alloc(4)
	return output(strconv.Itoa(int(loadU8(p + 4))))
}

// wild reads at an address that is no block.
//
//go:wasmexport wild
func wild() int32 { return output(strconv.Itoa(int(loadU8(0x7777<<48 + 3)))) }

// freetwice frees a block twice, then the address of no block; length
// of unknown addresses is 0.
//
//go:wasmexport freetwice
func freetwice() int32 {
	p := alloc(8)
	free(p)
	free(p)
	free(12345)
	free(p + 1)
	return output("lengths " + strconv.Itoa(int(length(p))) + " " + strconv.Itoa(int(length(0x55<<48))) + " " + strconv.Itoa(int(length(p+1))))
}

// badoutput sets an output longer than its block.
//
//go:wasmexport badoutput
func badoutput() int32 {
	outputSet(alloc(4), 1<<20)
	return 0
}

// freedoutput frees its output's block, then allocates a smaller one
// (which takes its place), before returning.
//
//go:wasmexport freedoutput
func freedoutput() int32 {
	p := put([]byte("hello"))
	outputSet(p, 5)
	free(p)
	alloc(1)
	return 0
}

// varflood sets vars of 64 KiB under new names without end.
//
//go:wasmexport varflood
func varflood() int32 {
	for i := 0; ; i++ {
		varSet(put([]byte("k"+strconv.Itoa(i))), alloc(64<<10))
	}
}

// inputgone frees the input's block, then reads the input.
//
//go:wasmexport inputgone
func inputgone() int32 {
	free(inputOffset())
	return output(string(input()))
}

// erroring sets an error and returns 1.
//
//go:wasmexport erroring
func erroring() int32 { return fail("no luck: " + string(input())) }

// exitcode returns 7 without an error message.
//
//go:wasmexport exitcode
func exitcode() int32 { return 7 }

// describe and call make the module an mcp.run servlet as well.
//
//go:wasmexport describe
func describe() int32 {
	return output(`{"tools": [
  {"name": "shout", "title": "Shout", "description": "Shout a message back in capitals.", "annotations": {"readOnlyHint": true},
   "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
  {"name": "picture", "description": "Draw a tiny picture.", "inputSchema": {"type": "object"}},
  {"name": "grumpy", "description": "Refuse whatever is asked.", "inputSchema": {"type": "object"}}
]}`)
}

//go:wasmexport call
func call() int32 {
	var req struct {
		Params struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(input(), &req); err != nil {
		return fail("bad request: " + err.Error())
	}
	text := func(s string, isErr bool) int32 {
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": s}}, "isError": isErr})
		return output(string(b))
	}
	switch req.Params.Name {
	case "shout":
		msg, _ := req.Params.Arguments["message"].(string)
		return text(strings.ToUpper(msg), false)
	case "picture":
		b, _ := json.Marshal(map[string]any{"content": []any{
			map[string]string{"type": "text", "text": "here it is"},
			map[string]string{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))},
		}})
		return output(string(b))
	case "grumpy":
		return text("no", true)
	case "flood": // 30 images of 1 KiB
		img := map[string]string{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(make([]byte, 1<<10))}
		var content []any
		for range 30 {
			content = append(content, img)
		}
		b, _ := json.Marshal(map[string]any{"content": content})
		return output(string(b))
	}
	return text("unknown tool "+req.Params.Name, true)
}

func main() {}
