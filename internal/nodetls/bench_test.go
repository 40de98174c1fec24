package nodetls_test

import (
	"context"
	"io"
	"net"
	"testing"
)

// BenchmarkHandshake is one mutual TLS handshake between two nodes over
// loopback, both ends in this process (so ns/op is the CPU both sides
// spend, plus two round trips): what a new inter-node connection costs
// before its first byte.
func BenchmarkHandshake(b *testing.B) {
	ca := mustCA(b)
	dir := b.TempDir()
	n1 := load(b, nodeFiles(b, ca, dir, 1, 0), 1, io.Discard)
	n2 := load(b, nodeFiles(b, ca, dir, 2, 0), 2, io.Discard)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ln := n1.Listener(raw)
	defer ln.Close()
	acceptEach(ln, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	addr := raw.Addr().String()
	b.ResetTimer()
	for b.Loop() {
		c, err := n2.Dial(context.Background(), &net.Dialer{}, addr, 1)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
