// Command model serves the scripted model (internal/scripted) on
// 127.0.0.1 for make clients: an OpenAI-compatible chat completions
// endpoint that follows the script in the last user message, and GET
// /debug/tools, the tool names of every request it received, in order
// (what the clients' checks read to see that a follow-up still carried
// the tools the first request discovered). It prints its base URL and
// serves until killed.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

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
	mux.Handle("/", model)
	fmt.Printf("http://%s/v1\n", l.Addr())
	log.Fatal(http.Serve(l, mux))
}
