package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var pprofRE = regexp.MustCompile(`profiling on http://(\S+)/debug/pprof/`)

// TestServePprof: --pprof-listen serves Go's profiling endpoints, which is
// how a slow broker is diagnosed in place (a goroutine dump here); without
// the flag nothing listens.
func TestServePprof(t *testing.T) {
	p := startServe(t, "--data-dir", t.TempDir(), "--pprof-listen", "127.0.0.1:0")
	if p.addr == "" {
		t.Fatalf("broker did not start:\n%s", p.logs.String())
	}
	base := "http://" + p.logged(t, pprofRE)
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(base + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "internal/kafka") {
		t.Fatalf("goroutine dump: %s\n%.500s", resp.Status, body)
	}

	q := startServe(t, "--data-dir", t.TempDir())
	if pprofRE.MatchString(q.logs.String()) {
		t.Fatalf("profiling served without --pprof-listen:\n%s", q.logs.String())
	}
}
