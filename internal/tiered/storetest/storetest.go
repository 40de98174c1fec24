// Package storetest serves a real S3-protocol object store to tests behind
// a proxy that injects the failures of a real store: an outage (503
// SlowDown), refused requests (403 AccessDenied), a body corrupted on the
// way, and a request held in flight until the test lets it through — also
// after the client that sent it is gone, as a request already on the wire
// reaches the store after its sender died.
//
// The store is an external S3-compatible server when STRAND_TEST_S3_ENDPOINT
// is set (CI runs SeaweedFS there: test/seaweedfs.sh), with
// STRAND_TEST_S3_ACCESS_KEY and STRAND_TEST_S3_SECRET_KEY its credentials;
// each Start makes a bucket of its own in it and empties and removes it when
// the test ends. Without it the store is gofakes3, in memory, in the test
// process, so `go test ./...` needs nothing installed; in front of it a
// check of a PUT's x-amz-checksum-crc32c, which real stores make and
// gofakes3 does not. Either way the proxy
// forwards requests as the client sent and signed them (SigV4 signs the Host
// header, so it is kept).
//
// It is for tests only; nothing in the broker imports it. A Server is safe
// for concurrent use.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Bucket is the bucket TestServeStandalone serves.
const Bucket = "tier"

// The environment that points Start at an external store.
const (
	EnvEndpoint  = "STRAND_TEST_S3_ENDPOINT"
	EnvAccessKey = "STRAND_TEST_S3_ACCESS_KEY"
	EnvSecretKey = "STRAND_TEST_S3_SECRET_KEY"
)

// Server is the store and its fault-injecting proxy. URL is the proxy's;
// Bucket, Region and the keys are what a client of it uses.
type Server struct {
	URL       string
	Bucket    string
	Region    string
	AccessKey string
	SecretKey string
	// External says the store is an external server, not gofakes3.
	External bool

	target    *url.URL
	proxy     *httputil.ReverseProxy
	transport *http.Transport
	down      atomic.Bool
	mu        struct {
		sync.Mutex
		refuse  func(*http.Request) bool
		hold    *Held
		corrupt func(*http.Request) bool
	}
}

// Start serves a store with one fresh, empty bucket, s.Bucket, behind the
// fault proxy, until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{Region: "us-east-1", Bucket: freshBucket()}
	endpoint := os.Getenv(EnvEndpoint)
	if endpoint == "" {
		backend := s3mem.New()
		if err := backend.CreateBucket(s.Bucket); err != nil {
			t.Fatal(err)
		}
		store := httptest.NewServer(checksummed(gofakes3.New(backend).Server()))
		t.Cleanup(store.Close)
		endpoint, s.AccessKey, s.SecretKey = store.URL, "strand", "secret"
	} else {
		s.External = true
		s.AccessKey, s.SecretKey = os.Getenv(EnvAccessKey), os.Getenv(EnvSecretKey)
		createBucket(t, endpoint, s)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	s.target = u
	s.transport = http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(s.transport.CloseIdleConnections)
	s.proxy = &httputil.ReverseProxy{
		// Only the destination changes: r.Host stays the proxy's address,
		// the host the client signed.
		Director: func(r *http.Request) {
			r.URL.Scheme, r.URL.Host = u.Scheme, u.Host
			r.Header["X-Forwarded-For"] = nil // not added either
		},
		Transport:     s.transport,
		FlushInterval: -1,
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// freshBucket is a bucket name no other Start uses.
func freshBucket() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "strand-test-" + hex.EncodeToString(b[:])
}

// createBucket makes s.Bucket in the external store at endpoint and, when
// the test ends, removes its objects, unfinished multipart uploads and the
// bucket itself (directly, not through the proxy, which may be down).
func createBucket(t testing.TB, endpoint string, s *Server) {
	t.Helper()
	if s.AccessKey == "" || s.SecretKey == "" {
		t.Fatalf("%s is set but %s or %s is not", EnvEndpoint, EnvAccessKey, EnvSecretKey)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Secure: u.Scheme == "https", Region: s.Region, BucketLookup: minio.BucketLookupPath, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections() // a test's leak check must not find them
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatalf("creating bucket %s at %s: %v", s.Bucket, endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		defer tr.CloseIdleConnections()
		for up := range c.ListIncompleteUploads(ctx, s.Bucket, "", true) {
			if up.Err == nil {
				_ = c.RemoveIncompleteUpload(ctx, s.Bucket, up.Key)
			}
		}
		objs := c.ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Recursive: true})
		for e := range c.RemoveObjects(ctx, s.Bucket, objs, minio.RemoveObjectsOptions{}) {
			t.Logf("storetest: removing %s from bucket %s: %v", e.ObjectName, s.Bucket, e.Err)
		}
		if err := c.RemoveBucket(ctx, s.Bucket); err != nil {
			t.Logf("storetest: removing bucket %s: %v", s.Bucket, err)
		}
	})
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

// Corrupt flips one byte of the body of the next request fn matches on
// its way to the store (only one: later ones pass), as a faulty link or
// NIC would.
func (s *Server) Corrupt(fn func(*http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.corrupt = fn
}

// flipped is a body whose first byte arrives inverted.
type flipped struct {
	io.ReadCloser
	done bool
}

func (f *flipped) Read(b []byte) (int, error) {
	n, err := f.ReadCloser.Read(b)
	if n > 0 && !f.done {
		b[0] ^= 0xff
		f.done = true
	}
	return n, err
}

// checksummed is what S3 does with a PUT that carries its body's CRC-32C
// (x-amz-checksum-crc32c), which gofakes3 does not: it checks the body
// against it and refuses the object (400 BadDigest) if they differ.
func checksummed(next http.Handler) http.Handler {
	table := crc32.MakeTable(crc32.Castagnoli)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := r.Header.Get("X-Amz-Checksum-Crc32c")
		if r.Method != http.MethodPut || want == "" {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength < 0 || r.ContentLength > 1<<30 {
			fail(w, http.StatusBadRequest, "MissingContentLength")
			return
		}
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			fail(w, http.StatusBadRequest, "IncompleteBody")
			return
		}
		if got := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.Checksum(body, table))); got != want {
			fail(w, http.StatusBadRequest, "BadDigest")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
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
	if s.mu.corrupt != nil && s.mu.corrupt(r) {
		s.mu.corrupt = nil
		r.Body = &flipped{ReadCloser: r.Body}
	}
	s.mu.Unlock()
	if refuse != nil && refuse(r) {
		fail(w, http.StatusForbidden, "AccessDenied")
		return
	}
	if h == nil {
		s.proxy.ServeHTTP(w, r)
		return
	}
	s.serveHeld(w, r, h)
}

// serveHeld reads the request whole, waits for Release, then sends the
// store the same request — method, URL, headers (Host included) and body,
// byte for byte — on a context of its own, not the sender's connection.
func (s *Server) serveHeld(w http.ResponseWriter, r *http.Request, h *Held) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(w, http.StatusBadRequest, "IncompleteBody")
		return
	}
	h.Method, h.Path, h.Body = r.Method, r.URL.Path, body
	close(h.arrived)
	<-h.release
	out := r.Clone(context.Background())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = s.target.Scheme, s.target.Host
	out.Host = r.Host
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.TransferEncoding = nil
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		h.Status = http.StatusBadGateway
		close(h.done)
		fail(w, http.StatusBadGateway, "InternalError")
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	h.Status = resp.StatusCode
	close(h.done)
	if err != nil {
		fail(w, http.StatusBadGateway, "InternalError")
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

func fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message></Error>`, code)
}
