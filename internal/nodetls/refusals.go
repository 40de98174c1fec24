package nodetls

import (
	"log/slog"
	"net"
	"sync"
)

// refusalLog logs a refused peer once per remote host and reason: a node
// retrying with a bad certificate redials every few milliseconds, and one
// line says all there is to say.
type refusalLog struct {
	mu   sync.Mutex
	seen map[string]string // remote host → the last reason logged
}

// maxRefusalHosts bounds the memory a scan of many source addresses can
// take; past it the log starts over.
const maxRefusalHosts = 4096

func (r *refusalLog) log(logger *slog.Logger, remote net.Addr, err error) {
	host := remote.String()
	if h, _, splitErr := net.SplitHostPort(host); splitErr == nil {
		host = h
	}
	reason := err.Error()
	r.mu.Lock()
	if r.seen == nil || len(r.seen) >= maxRefusalHosts {
		r.seen = map[string]string{}
	}
	last, ok := r.seen[host]
	r.seen[host] = reason
	r.mu.Unlock()
	if ok && last == reason {
		return
	}
	logger.Warn("nodetls: refused an inter-node connection (TLS handshake failed); further refusals of this peer for the same reason are not logged",
		"peer", remote.String(), "reason", reason)
}
