// Command model serves the scripted model (internal/scripted) on
// 127.0.0.1 for make clients: an OpenAI-compatible chat completions
// endpoint that follows the script in the last user message, and GET
// /debug/tools, the tool names of every request it received, in order
// (what the clients' checks read to see that a follow-up still carried
// the tools the first request discovered).
//
// A request for a model named fault-STATUS (fault-429, fault-503, ...)
// is answered with that status every time (a 429 with retry-after-ms:
// 10), and counted: GET /debug/faults has the count per model name, what
// the clients' retry checks read. It prints its base URL and serves until
// killed.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/toolshed/toolshed/internal/scripted"
)

func main() {
	addr := "127.0.0.1:0"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	model := &scripted.Model{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/tools", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(model.ToolsSent())
	})
	var mu sync.Mutex
	faults := map[string]int{}
	mux.HandleFunc("GET /debug/faults", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(faults)
	})
	mux.Handle("/", model)
	model.Before = func(_ int, w http.ResponseWriter, r *http.Request) bool {
		var req struct {
			Model string `json:"model"`
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		json.Unmarshal(body, &req)
		code, ok := strings.CutPrefix(req.Model, "fault-")
		status, err := strconv.Atoi(code)
		if !ok || err != nil {
			return false
		}
		mu.Lock()
		faults[req.Model]++
		mu.Unlock()
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After-Ms", "10")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"scripted fault %d","type":"server_error"}}`, status)
		return true
	}
	fmt.Printf("http://%s/v1\n", l.Addr())
	log.Fatal(http.Serve(l, mux))
}
