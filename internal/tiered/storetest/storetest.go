// Package storetest serves a real S3-protocol object store to tests
// (gofakes3, in memory, over HTTP on a loopback port) behind a proxy that
// injects the failures of a real store: an outage (503 SlowDown), refused
// requests (403 AccessDenied) and a request held in flight until the test
// lets it through — also after the client that sent it is gone, as a
// request already on the wire reaches the store after its sender died.
//
// It is for tests only; nothing in the broker imports it. A Server is safe
// for concurrent use.
package storetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/strandmq/strand/internal/tiered"
)

// Bucket is the bucket a Server creates.
const Bucket = "tier"

// Server is the store and its fault-injecting proxy.
type Server struct {
	URL   string
	store http.Handler
	down  atomic.Bool
	mu    struct {
		sync.Mutex
		refuse func(*http.Request) bool
		hold   *Held
	}
}

// Start serves a store with one bucket, Bucket, until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatal(err)
	}
	s := &Server{store: gofakes3.New(backend).Server()}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// SetDown starts (true) or ends an outage: meanwhile every request is
// answered 503 SlowDown.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Refuse answers 403 AccessDenied to every request fn matches; nil: none.
func (s *Server) Refuse(fn func(*http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.refuse = fn
}

// Held is one request the proxy holds in flight.
type Held struct {
	match   func(*http.Request) bool
	arrived chan struct{}
	release chan struct{}
	done    chan struct{}
	once    sync.Once
	Method  string
	Path    string
	Body    []byte // set once Arrived
	Status  int    // the store's answer, once Done
}

// Arrived is closed once the held request has come in (its body read).
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// Payload is the held request's object bytes: its body, without the
// aws-chunked framing (chunk sizes and signatures) of a streaming SigV4
// upload, which minio-go uses.
func (h *Held) Payload() []byte {
	if !bytes.Contains(h.Body[:min(len(h.Body), 100)], []byte(";chunk-signature=")) {
		return h.Body
	}
	var out []byte
	rest := h.Body
	for {
		line, after, ok := bytes.Cut(rest, []byte("\r\n"))
		if !ok {
			return out
		}
		hexSize, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(hexSize), 16, 64)
		if err != nil || n == 0 || int64(len(after)) < n {
			return out
		}
		out = append(out, after[:n]...)
		rest = bytes.TrimPrefix(after[n:], []byte("\r\n"))
	}
}

// Release lets the held request through to the store, whether or not its
// sender still waits for the answer.
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

// Done is closed once the released request has reached the store.
func (h *Held) Done() <-chan struct{} { return h.done }

// Hold holds the next request match accepts (only one: later ones pass)
// until Release. Release it before the test ends.
func (s *Server) Hold(match func(*http.Request) bool) *Held {
	h := &Held{match: match, arrived: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.hold = h
	return h
}

// IsPut matches PUTs of keys holding part (e.g. "/manifest/", ".log").
func IsPut(part string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == http.MethodPut && strings.Contains(r.URL.Path, part) }
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.down.Load() {
		fail(w, http.StatusServiceUnavailable, "SlowDown")
		return
	}
	s.mu.Lock()
	refuse, h := s.mu.refuse, s.mu.hold
	if h != nil && h.match(r) {
		s.mu.hold = nil
	} else {
		h = nil
	}
	s.mu.Unlock()
	if refuse != nil && refuse(r) {
		fail(w, http.StatusForbidden, "AccessDenied")
		return
	}
	if h == nil {
		s.store.ServeHTTP(w, r)
		return
	}
	s.serveHeld(w, r, h)
}

// serveHeld reads the request whole, waits for Release, then hands a copy
// to the store that does not depend on the sender's connection.
func (s *Server) serveHeld(w http.ResponseWriter, r *http.Request, h *Held) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(w, http.StatusBadRequest, "IncompleteBody")
		return
	}
	h.Method, h.Path, h.Body = r.Method, r.URL.Path, body
	close(h.arrived)
	<-h.release
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	s.store.ServeHTTP(rec, req)
	h.Status = rec.Code
	close(h.done)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message></Error>`, code)
}

// Client is a client of the store, through the proxy, for a test's own
// checks (list the bucket, read a manifest).
func (s *Server) Client(t testing.TB) *tiered.S3 {
	t.Helper()
	c, err := tiered.NewS3(tiered.S3Config{Endpoint: s.URL, Bucket: Bucket, Region: "us-east-1", AccessKey: "strand", SecretKey: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdle)
	return c
}
