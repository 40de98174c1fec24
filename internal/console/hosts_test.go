package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHostGuard: the console answers requests addressed to this machine
// (IP literals, localhost, its listen host, allowed names) and refuses
// any other Host, as a DNS-rebinding page would send.
func TestHostGuard(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	h := HostGuard(ok, "console.internal", []string{"strand.example.com"})
	for host, want := range map[string]int{
		"127.0.0.1:9645":          http.StatusOK,
		"[::1]:9645":              http.StatusOK,
		"10.1.2.3":                http.StatusOK,
		"localhost:9645":          http.StatusOK,
		"app.localhost:9645":      http.StatusOK,
		"console.internal:9645":   http.StatusOK,
		"STRAND.example.com:9645": http.StatusOK,
		"evil.example:9645":       http.StatusMisdirectedRequest,
		"127.0.0.1.evil.example":  http.StatusMisdirectedRequest,
		"localhost.evil.example":  http.StatusMisdirectedRequest,
		"":                        http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Host = "evil.example"
	HostGuard(ok, "", []string{"*"}).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf(`with "*" allowed: %d`, rec.Code)
	}
}
