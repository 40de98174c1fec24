package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var metricsRE = regexp.MustCompile(`metrics on http://(\S+)/metrics`)

// TestServeSurvivesFdExhaustion: under `ulimit -n 64`, clients that take
// every file descriptor make Accept fail; the listener backs off instead of
// dying, says so once, counts it (strand_accept_errors_total) and reports it
// on /healthz; once the connections go, new clients are served again.
func TestServeSurvivesFdExhaustion(t *testing.T) {
	p := startServeNofile(t, 64, "--data-dir", t.TempDir(), "--metrics-listen", "127.0.0.1:0")
	if p.addr == "" {
		t.Fatalf("broker did not start under ulimit -n 64:\n%s", p.logs.String())
	}
	// One kept-alive HTTP connection, opened while descriptors are free:
	// a scraper's view while the process has none to spare.
	metrics := "http://" + p.logged(t, metricsRE)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get(metrics + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz before the flood: %d %s", code, body)
	}

	var flood []net.Conn
	for range 100 {
		c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get("/healthz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "cannot accept connections") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never reported the listener: %d %s\n%s", code, body, p.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, body := get("/metrics"); !regexp.MustCompile(`(?m)^strand_accept_errors_total [1-9]`).MatchString(body) {
		t.Errorf("strand_accept_errors_total not counted:\n%s", grepLines(body, "strand_accept"))
	}
	for _, c := range flood {
		c.Close()
	}

	// Served again: a fresh client gets an answer, the log says so.
	deadline = time.Now().Add(30 * time.Second)
	for !apiVersionsOK(p.addr) {
		if time.Now().After(deadline) {
			t.Fatalf("no new client served after the flood ended:\n%s", p.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.logged(t, regexp.MustCompile(`(accepting connections again)`))
	if n := strings.Count(p.logs.String(), "cannot accept connections; retrying"); n < 1 || n > 3 {
		t.Errorf("%d log lines for one burst of accept errors, want one (or a few):\n%s", n, p.logs.String())
	}
	deadline = time.Now().Add(30 * time.Second)
	for code, _ := get("/healthz"); code != http.StatusOK; code, _ = get("/healthz") {
		if time.Now().After(deadline) {
			t.Fatal("/healthz stays unhealthy after the listener recovered")
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.stop(t)
}

// apiVersionsOK reports whether a new connection to addr gets an
// ApiVersions answer within a few seconds.
func apiVersionsOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		return false
	}
	var size [4]byte
	_, err = io.ReadFull(c, size[:])
	return err == nil
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strconv.Itoa(len(out)) + " lines:\n" + strings.Join(out, "\n")
}

var consoleRE = regexp.MustCompile(`console on http://(\S+)/`)

// TestServeConsoleRefusesForeignHost: the console of a running `strand
// serve` answers by IP address and by a name given with
// --console-allowed-hosts, and refuses a Host a DNS-rebinding page would
// send with 421.
func TestServeConsoleRefusesForeignHost(t *testing.T) {
	p := startServe(t, "--data-dir", t.TempDir(), "--console-listen", "127.0.0.1:0", "--console-allowed-hosts", "strand.test")
	if p.addr == "" {
		t.Fatalf("broker did not start:\n%s", p.logs.String())
	}
	addr := p.logged(t, consoleRE)
	for host, want := range map[string]int{addr: http.StatusOK, "strand.test": http.StatusOK, "rebound.example": http.StatusMisdirectedRequest} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d %s, want %d", host, resp.StatusCode, body, want)
		}
	}
	p.stop(t)
}
