package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves Go's profiling endpoints (/debug/pprof/: CPU and heap
// profiles, goroutine dumps, execution traces) on addr until the returned
// stop is called. It is off unless --pprof-listen names an address, and it
// has no authentication or TLS: an operator binds it to loopback and reads
// it from the machine (`go tool pprof http://ADDR/debug/pprof/profile`,
// `curl -o t.out http://ADDR/debug/pprof/trace?seconds=5`).
func servePprof(addr string, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("strand: pprof listener stopped", "err", err)
		}
	}()
	logger.Info("strand: profiling on http://"+ln.Addr().String()+"/debug/pprof/", "pprof", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}
