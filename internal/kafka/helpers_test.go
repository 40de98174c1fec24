package kafka

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/wire"
	"go.uber.org/goleak"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// sarama's metrics registry keeps a process-wide ticker (interop tests).
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	)
}

// testLogger discards below warnings unless STRAND_TEST_LOG is set.
func testLogger() *slog.Logger {
	level := slog.LevelError + 4
	if os.Getenv("STRAND_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

type testServer struct {
	b    *broker.Broker
	s    *Server
	addr string
}

// startServer runs a broker and server on a free loopback port, closed at
// test cleanup.
func startServer(t testing.TB, bcfg broker.Config, scfg Config) *testServer {
	t.Helper()
	return startServerTLS(t, bcfg, scfg, nil)
}

// startServerTLS is startServer with a TLS listener when tlsCfg is not nil.
func startServerTLS(t testing.TB, bcfg broker.Config, scfg Config, tlsCfg *tls.Config) *testServer {
	t.Helper()
	if bcfg.Dir == "" {
		bcfg.Dir = t.TempDir()
	}
	bcfg.Logger = testLogger()
	b, err := broker.Open(bcfg)
	if err != nil {
		t.Fatal(err)
	}
	scfg.Broker = b
	if scfg.Logger == nil {
		scfg.Logger = bcfg.Logger
	}
	s, err := NewServer(scfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return &testServer{b: b, s: s, addr: addr}
}

// rawClient speaks the protocol over one connection with kmsg.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	corr int32
}

func dial(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, conn: c}
}

// send writes req at version v and returns its correlation id.
func (c *rawClient) send(req kmsg.Request, v int16) int32 {
	c.t.Helper()
	req.SetVersion(v)
	c.corr++
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, c.corr)
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
	return c.corr
}

// recv reads one response of the kind req expects.
func (c *rawClient) recv(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	resp, err := c.tryRecv(req, corr)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *rawClient) tryRecv(req kmsg.Request, corr int32) (kmsg.Response, error) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	// Not readFrame: its lower bound is for requests, and a response can be
	// as short as 6 bytes (Heartbeat v0).
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<30 {
		c.t.Fatalf("response frame of %d bytes", n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(c.conn, frame); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() && resp.Key() != apiKeyApiVersions {
		var err error
		if body, err = wire.SkipTags(body); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

func (c *rawClient) do(req kmsg.Request, v int16) kmsg.Response {
	c.t.Helper()
	return c.recv(req, c.send(req, v))
}

// expectClosed asserts the server closes the connection (reads EOF).
func (c *rawClient) expectClosed() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(c.conn); err != nil {
		c.t.Fatalf("want the server to close the connection, got %v", err)
	}
}

func createTopic(t testing.TB, b *broker.Broker, name string, partitions int32, configs map[string]string) *broker.Topic {
	t.Helper()
	tp, err := b.CreateTopic(broker.TopicSpec{Name: name, Partitions: partitions, Configs: configs})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// batch encodes n records "k<i>"/"v<i>" with the given producer fields.
func batch(t *testing.T, n int, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Offset: record.Offset(i), Timestamp: 1_700_000_000_000 + int64(i),
			Key: []byte{'k', byte('0' + i%10)}, Value: []byte("value")}
	}
	opts := record.DefaultBatchOptions()
	if pid >= 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, seq
	}
	b, err := record.Encode(0, recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceReq(topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func producePartition(t *testing.T, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.ProduceResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response shape: %+v", r)
	}
	return r.Topics[0].Partitions[0]
}
