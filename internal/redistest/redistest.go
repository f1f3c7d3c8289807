// Package redistest starts a throwaway redis-server for tests, on
// 127.0.0.1 and a free port, with no persistence.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server process. Its methods are safe for
// concurrent use.
type Server struct {
	// Addr is HOST:PORT; URL is redis://Addr/0, with the password when
	// one was asked for.
	Addr, URL string

	// CA is the PEM of the certificate authority that signed a TLS
	// server's certificate (StartTLS); nil for plain TCP.
	CA []byte

	t        testing.TB
	bin      string
	password string
	tls      []string // redis-server's TLS arguments
	mu       sync.Mutex
	cmd      *exec.Cmd
}

// Start starts redis-server (Debian's redis-server package) and stops it
// when the test ends. Without it the test is skipped, saying so, or fails
// when CI is set (CI installs it).
func Start(t testing.TB) *Server { return StartWithPassword(t, "") }

// StartWithPassword is Start with requirepass set (password "": none).
func StartWithPassword(t testing.TB, password string) *Server {
	t.Helper()
	s := prepare(t, password)
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// StartTLS is Start with TLS only (rediss://): a certificate for
// 127.0.0.1 signed by a throwaway authority (Server.CA), no plain port,
// no client certificates asked for.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	s := prepare(t, "")
	dir := t.TempDir()
	ca, cert, key := selfSigned(t, "127.0.0.1")
	for name, b := range map[string][]byte{"ca.pem": ca, "cert.pem": cert, "key.pem": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	s.tls = []string{"--port", "0", "--tls-port", port, "--tls-cert-file", filepath.Join(dir, "cert.pem"),
		"--tls-key-file", filepath.Join(dir, "key.pem"), "--tls-ca-cert-file", filepath.Join(dir, "ca.pem"),
		"--tls-auth-clients", "no"}
	s.URL, s.CA = "rediss://"+s.Addr+"/0", ca
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// prepare finds redis-server and a free port.
func prepare(t testing.TB, password string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server not found (Debian's redis-server package): CI installs it")
		}
		t.Skip("SKIP session store: no redis-server found (install Debian's redis-server package)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{Addr: addr, URL: "redis://" + addr + "/0", t: t, bin: bin, password: password}
	if password != "" {
		s.URL = "redis://:" + password + "@" + addr + "/0"
	}
	return s
}

// Stop kills the server (as a crash would: no shutdown save).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Pause stops the server without ending it (SIGSTOP): connections stay
// open and nothing answers, as a store that hangs; Resume lets it go on
// with what it held.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(sig)
	}
}

// Restart starts the server again on the same port, empty (a stopped one
// is started; a running one is left alone), and waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	args := []string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", s.t.TempDir(), "--protected-mode", "no"}
	if s.password != "" {
		args = append(args, "--requirepass", s.password)
	}
	args = append(args, s.tls...) // the later --port wins
	cmd := exec.Command(s.bin, args...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redis-server: %v", err)
	}
	ready := make(chan string, 1)
	go func() {
		var log []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			log = append(log, sc.Text())
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- ""
				for sc.Scan() {
				}
				return
			}
		}
		ready <- strings.Join(log, "\n")
	}()
	select {
	case msg := <-ready:
		if msg != "" {
			cmd.Wait()
			s.t.Fatalf("redis-server on %s did not start:\n%s", s.Addr, msg)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		s.t.Fatalf("redis-server on %s: not ready within a minute", s.Addr)
	}
	s.cmd = cmd
}

// String is the address, for messages.
func (s *Server) String() string { return fmt.Sprintf("redis-server on %s", s.Addr) }
