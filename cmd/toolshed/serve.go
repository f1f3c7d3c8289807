package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/search"
)

// server serves the catalog endpoints over a live catalog.
type server struct {
	live    *catalog.Live
	runtime *wasm.Host
	started time.Time
}

type pluginStatus struct {
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Manifest string   `json:"manifest"`
	Tools    []string `json:"tools"`
	State    string   `json:"state"` // ready, failed, not compiled
	Error    string   `json:"error,omitempty"`
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /v1/plugins", s.plugins)
	mux.HandleFunc("GET /v1/search", s.search)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"message": msg}})
}

func (s *server) plugins(w http.ResponseWriter, r *http.Request) {
	snap := s.live.Snapshot()
	out := struct {
		Generation uint64         `json:"generation"`
		Dir        string         `json:"dir"`
		Plugins    []pluginStatus `json:"plugins"`
		Errors     []errorJSON    `json:"errors"`
	}{snap.Generation, snap.Dir, []pluginStatus{}, []errorJSON{}}
	for _, p := range snap.Plugins {
		st := pluginStatus{Name: p.Name(), Version: p.Manifest.Version, Manifest: p.ManifestPath, Tools: []string{}}
		for _, t := range p.Tools {
			st.Tools = append(st.Tools, t.Name())
		}
		var err error
		st.State, err = s.runtime.PluginState(p)
		if err != nil {
			st.Error = err.Error()
		}
		out.Plugins = append(out.Plugins, st)
	}
	for _, e := range snap.Errors {
		out.Errors = append(out.Errors, errorJSON{File: e.File, Error: e.Error()})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		httpError(w, http.StatusBadRequest, "the query parameter q is required: /v1/search?q=...")
		return
	}
	limit := search.DefaultLimit
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			httpError(w, http.StatusBadRequest, "limit must be a whole number from 1 to 100")
			return
		}
		limit = n
	}
	snap := s.live.Snapshot()
	res, err := snap.Search(q, limit)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Results []searchResult `json:"results"`
		Unknown []string       `json:"unknown,omitempty"`
	}{searchResults(snap, res), res.Unknown})
}

func cmdServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	dir := fs.String("plugins", defaultPluginDir(), "plugin directory")
	grants := fs.String("grants", "", "operator grants, caps and databases `FILE` (docs/RUNTIME.md)")
	watch := fs.Bool("watch", true, "reload the plugin directory when it changes")
	poll := fs.Duration("poll", 2*time.Second, "also rescan the directory this often (file systems without events); 0: never")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "usage: toolshed serve [--addr HOST:PORT] [--plugins DIR] [--watch=false] [--grants FILE]")
		return errUsage
	}
	log := newServerLogger(stderr)
	op, err := loadOperator(*dir, *grants, *dir == defaultPluginDir())
	if err != nil {
		return err
	}
	defer op.close()
	opts := op.options("", 0, stderr)
	opts.Logger = log
	rt, err := wasm.New(opts)
	if err != nil {
		return err
	}
	defer rt.Close(context.Background())
	// After each swap the runtime retires plugin versions the catalog no
	// longer holds (closed once no request uses them).
	live, err := catalog.NewLive(*dir, catalog.LiveOptions{Logger: log, OnChange: func(_, s *catalog.Snapshot) { rt.Sync(s) }})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *watch {
		p := *poll
		if p == 0 {
			p = -1
		}
		go live.Watch(ctx, catalog.WatchOptions{Poll: p})
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: (&server{live: live, runtime: rt, started: time.Now()}).routes(),
		ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	fmt.Fprintf(stdout, "toolshed serving %d tools from %s on http://%s (GET /v1/plugins, /v1/search?q=, /healthz)\n",
		len(live.Snapshot().Tools), *dir, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
