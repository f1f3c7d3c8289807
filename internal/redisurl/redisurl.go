// Package redisurl checks and redacts the URL of a Redis or Valkey server
// (server.sessions.store) with the standard library alone, so that the
// configuration's loader checks it without the client's dependencies.
package redisurl

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Validate checks rawURL: redis:// or rediss:// (TLS), a host, and a
// database number as the path, if any. Its errors never show the
// password.
func Validate(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("not a URL (redis://[USER:PASSWORD@]HOST:PORT/DB or rediss:// for TLS)")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("scheme %q: want redis:// or rediss:// (TLS)", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("no host (redis://HOST:PORT/DB)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q is not a port number", p)
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return fmt.Errorf("invalid database number %q (the path is the database: /0, /1, ...)", db)
		}
	}
	return nil
}

// Redact is rawURL with its password masked, for logs and errors.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(not a URL)"
	}
	return u.Redacted()
}

// CAPool reads a PEM file of certificate authorities for rediss:// (a
// private authority's certificate, as managed stores and self-run TLS
// give them out).
func CAPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", path)
	}
	return pool, nil
}
