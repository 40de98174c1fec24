package kafka

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestIdleConnectionClosed: connections.max.idle.ms closes a connection
// that sends nothing, and keeps one that keeps asking.
func TestIdleConnectionClosed(t *testing.T) {
	ts := startServer(t, broker.Config{}, Config{MaxIdle: 300 * time.Millisecond})
	idle := dial(t, ts.addr)
	busy := dial(t, ts.addr)
	for range 15 { // 1.5 s: five times the limit
		busy.do(kmsg.NewPtrApiVersionsRequest(), 3)
		time.Sleep(100 * time.Millisecond)
	}
	idle.expectClosed()
	busy.do(kmsg.NewPtrApiVersionsRequest(), 3) // still open
}

// TestConnectionLimits: max.connections.per.ip and max.connections close
// new connections past them at once (counted), and a slot freed by a
// closed connection is usable again.
func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"per-ip", Config{MaxConnectionsPerIP: 2}},
		{"total", Config{MaxConnections: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, broker.Config{}, tc.cfg)
			a, b := dial(t, ts.addr), dial(t, ts.addr)
			a.do(kmsg.NewPtrApiVersionsRequest(), 3)
			b.do(kmsg.NewPtrApiVersionsRequest(), 3)
			third := dial(t, ts.addr)
			third.expectClosed()
			if got := ts.s.RefusedConnections(); got != 1 {
				t.Fatalf("refused connections = %d, want 1", got)
			}
			a.conn.Close()
			waitFor(t, "the closed connection to be forgotten", func() bool { return ts.s.Connections() == 1 })
			dial(t, ts.addr).do(kmsg.NewPtrApiVersionsRequest(), 3)
		})
	}
}

// TestQueuedRequestBytesBounded: connections trickling large frames hold
// at most queued.max.request.bytes between them — the rest are not read —
// while small requests from another client are served throughout; bytes
// of frames cut short are given back.
func TestQueuedRequestBytesBounded(t *testing.T) {
	const limit = 1 << 20
	const frame = 400 << 10 // two fit, the third waits
	ts := startServer(t, broker.Config{}, Config{QueuedMaxRequestBytes: limit})
	createTopic(t, ts.b, "small", 1, nil)
	var trickles []net.Conn
	for range 8 {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		hdr := binary.BigEndian.AppendUint32(nil, frame)
		if _, err := c.Write(append(hdr, make([]byte, 1000)...)); err != nil {
			t.Fatal(err)
		}
		trickles = append(trickles, c)
	}
	waitFor(t, "two frames to hold the budget", func() bool { now, _ := ts.s.QueuedRequestBytes(); return now == 2*frame })

	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("small"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("small produce while the budget is spent: %v", err)
		}
	}
	for _, c := range trickles {
		c.Close()
	}
	waitFor(t, "cut-short frames to give their bytes back", func() bool { now, _ := ts.s.QueuedRequestBytes(); return now == 0 })
	if _, peak := ts.s.QueuedRequestBytes(); peak > limit {
		t.Fatalf("peak queued request bytes %d above the limit %d", peak, limit)
	}
}

// dialFrom connects to addr from the loopback address from (127.0.0.x).
func dialFrom(t *testing.T, from, addr string) *rawClient {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, conn: c}
}

// served opens n connections from one address at once, sends each an
// ApiVersions request, and counts the ones answered (the others are
// closed by the broker).
func served(t *testing.T, from, addr string, n int) int {
	t.Helper()
	cs := make([]*rawClient, n)
	corr := make([]int32, n)
	for i := range cs {
		cs[i] = dialFrom(t, from, addr)
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	for i, c := range cs {
		corr[i] = c.send(req, 3)
	}
	ok := 0
	for i, c := range cs {
		if _, err := c.tryRecv(req, corr[i]); err == nil {
			ok++
		}
	}
	return ok
}

// TestConnectionCreationRatePerIP: past max.connection.creation.rate per
// IP, new connections from that IP are closed (counted as refused) while
// another IP connects freely. At most burst + rate × elapsed connections
// of the first IP are served — a bound computed from the time the test
// measured, so a slow machine only loosens it.
func TestConnectionCreationRatePerIP(t *testing.T) {
	const rate, n = 4, 12
	ts := startServer(t, broker.Config{}, Config{MaxConnectionRatePerIP: rate})
	start := time.Now()
	got := served(t, "127.0.0.1", ts.addr, n)
	elapsed := time.Since(start)
	bound := rate + int(rate*elapsed.Seconds()) + 1
	t.Logf("%d of %d connections opened at once from 127.0.0.1 served in %v (rate %d/s; bound %d)", got, n, elapsed.Round(time.Millisecond), rate, bound)
	if got < rate || got > bound {
		t.Fatalf("served %d, want between %d (the burst) and %d", got, rate, bound)
	}
	if refused := ts.s.RefusedConnections(); refused != uint64(n-got) {
		t.Fatalf("refused connections = %d, want %d", refused, n-got)
	}
	if other := served(t, "127.0.0.2", ts.addr, rate); other != rate {
		t.Fatalf("another IP: %d of %d served, want all", other, rate)
	}
}

// TestConnectionCreationRateBrokerWide: past the broker-wide
// max.connection.creation.rate the listener accepts later rather than
// refusing: every connection is served, none refused, and the last is
// answered no sooner than the rate allows ((n − burst) / rate after the
// first), a lower bound a slow machine cannot break.
func TestConnectionCreationRateBrokerWide(t *testing.T) {
	const rate, n = 4, 12
	ts := startServer(t, broker.Config{}, Config{MaxConnectionRate: rate})
	start := time.Now()
	got := served(t, "127.0.0.1", ts.addr, n)
	elapsed := time.Since(start)
	t.Logf("%d of %d connections opened at once served in %v (rate %d/s), accept loop held back %d times", got, n, elapsed.Round(time.Millisecond), rate, ts.s.ConnectionRateWaits())
	if got != n || ts.s.RefusedConnections() != 0 {
		t.Fatalf("served %d of %d, refused %d: want all served, none refused", got, n, ts.s.RefusedConnections())
	}
	if min := time.Duration(float64(n-rate-1) / rate * float64(time.Second)); elapsed < min {
		t.Fatalf("%d connections served in %v, faster than the rate allows (%v)", n, elapsed, min)
	}
}
