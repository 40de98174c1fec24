package kafka

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/vfs"
)

// TestPipelinedProduce: while an acks=-1 produce waits for its commit (here
// an fsync the disk holds), the connection's next produce is appended
// already; neither is answered before its commit, and the answers come in
// request order, with a request behind them answered after both.
func TestPipelinedProduce(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	ts := startServer(t, broker.Config{FS: fs, Dir: "/data"}, Config{})
	createTopic(t, ts.b, "piped", 1, map[string]string{broker.ConfigFlushMessages: "1"})
	c := dial(t, ts.addr)
	free := holdFirstLogSync(t, fs)
	first := produceReq("piped", 0, batch(t, 1, -1, -1, -1))
	second := produceReq("piped", 0, batch(t, 2, -1, -1, -1))
	first.TimeoutMillis, second.TimeoutMillis = 60_000, 60_000
	c1, c2 := c.send(first, 9), c.send(second, 9)
	versions := kmsg.NewPtrApiVersionsRequest()
	c3 := c.send(versions, 2)

	// Served one at a time, the second would wait the first's 60 s.
	p, _ := ts.b.Partition("piped", 0)
	for deadline := time.Now().Add(10 * time.Second); p.LogEndOffset() != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second produce was not appended while the first waited for its fsync (log end %d, want 3)", p.LogEndOffset())
		}
	}
	// Nothing is committed while the disk holds: no answer yet.
	c.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var one [1]byte
	if _, err := c.conn.Read(one[:]); !isTimeout(err) {
		t.Fatalf("a response arrived before the produces were committed (read: %v)", err)
	}
	c.conn.SetReadDeadline(time.Time{})
	free()
	for i, want := range []struct {
		req  *kmsg.ProduceRequest
		corr int32
		base int64
	}{{first, c1, 0}, {second, c2, 1}} {
		if pp := producePartition(t, c.recv(want.req, want.corr)); pp.ErrorCode != 0 || pp.BaseOffset != want.base {
			t.Fatalf("produce %d: %v at offset %d, want offset %d", i+1, kerr.ErrorForCode(pp.ErrorCode), pp.BaseOffset, want.base)
		}
	}
	if r := c.recv(versions, c3).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("ApiVersions behind the produces: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if hw := p.HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d after both produces were answered, want 3", hw)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
