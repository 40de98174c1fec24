package kafka

import "time"

// Observer is told about every request the server handles. The metrics
// package implements it; kafka defines it, rather than importing metrics,
// because metrics sits above kafka in the layering and reads from it.
// Implementations must be safe for concurrent use and cheap: they run on
// every connection's read goroutine.
type Observer interface {
	// Request is called once per request after its handler ran and its
	// response was encoded: the API key, the time taken, and whether the
	// request failed so that the connection closes (a panic, a handler
	// error). Per-partition error codes in a response are not failures.
	Request(key int16, elapsed time.Duration, failed bool)
}

// observe reports a handled request to the configured Observer, if any.
func (s *Server) observe(key int16, start time.Time, err error) {
	if o := s.cfg.Observer; o != nil {
		o.Request(key, time.Since(start), err != nil)
	}
}

// Connections returns the number of open client connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}
