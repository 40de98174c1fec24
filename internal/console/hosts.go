package console

import (
	"net"
	"net/http"
	"os"
	"strings"
)

// HostGuard serves h only to requests whose Host header names this
// machine: an IP literal, localhost (or a name under .localhost), the
// machine's host name, the host the console listens on, or one of allowed
// ("*" allows any). Anything else is refused with 421 Misdirected Request.
//
// Why: a web page can make a browser resolve its own domain name to
// 127.0.0.1 (DNS rebinding) and then read a loopback console as
// same-origin; the Host header it sends is still that domain.
func HostGuard(h http.Handler, listenHost string, allowed []string) http.Handler {
	names := map[string]bool{}
	for _, n := range append([]string{listenHost}, allowed...) {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			names[n] = true
		}
	}
	if hn, err := os.Hostname(); err == nil {
		names[strings.ToLower(hn)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, names) {
			http.Error(w, "strand console: host "+r.Host+" is not allowed (DNS rebinding guard); "+
				"open the console by IP address or localhost, or add the name with --console-allowed-hosts",
				http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func hostAllowed(hostport string, names map[string]bool) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	switch {
	case names["*"], names[host]:
		return true
	case host == "localhost", strings.HasSuffix(host, ".localhost"):
		return true
	}
	return net.ParseIP(host) != nil
}
