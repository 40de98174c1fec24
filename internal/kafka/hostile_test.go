package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// header appends a request header (key, version, correlation id, client id)
// to dst.
func header(dst []byte, key, version int16, corr int32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	return binary.BigEndian.AppendUint16(dst, 0xffff) // null client id
}

func sized(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// TestHostileFrames sends garbage, truncated, oversized and unsupported
// frames on raw connections while a well-behaved idempotent producer on its
// own connection keeps producing: each hostile connection is closed (or, for
// an unknown ApiVersions version, answered), the producer never sees an
// error, and everything it was told is written can be read back.
func TestHostileFrames(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "steady", 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const records = 3000
	produced := make(chan error, 1)
	go func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("steady"), kgo.ProducerLinger(0))
		if err != nil {
			produced <- err
			return
		}
		defer cl.Close()
		for i := range records {
			r := &kgo.Record{Key: []byte{byte(i)}, Value: []byte("steady")}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				produced <- err
				return
			}
		}
		produced <- nil
	}()

	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	metadataBody := append(header(nil, 3, 9, 7), 0) // flexible header tags
	metadataBody = append(metadataBody, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f)
	cases := []struct {
		name  string
		bytes []byte
		// then, if set, the client closes its write side.
		halfClose bool
	}{
		{"garbage", garbage, true},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0x80000000), false},
		{"tiny size", sized([]byte{0, 3}), false},
		{"oversized", binary.BigEndian.AppendUint32(nil, 200<<20), false},
		{"claims 90 MiB, sends 10 bytes", append(binary.BigEndian.AppendUint32(nil, 90<<20), make([]byte, 10)...), true},
		{"truncated", sized(header(nil, 3, 1, 1))[:9], true},
		{"unknown api key", sized(header(nil, 9999, 0, 1)), false},
		{"unserved version", sized(header(nil, 0, 1, 1)), false},
		{"body lies about counts", sized(metadataBody), false},
		{"client id longer than frame", sized(append(header(nil, 3, 1, 1)[:8], 0x7f, 0xff, 'x')), false},
	}
	// Keep the hostile traffic going while the producer runs (bounded: at
	// least 3 rounds, at most 200).
	var producerErr error
	producerDone := false
	for round := 0; round < 200 && (round < 3 || !producerDone); round++ {
		if !producerDone {
			select {
			case producerErr = <-produced:
				producerDone = true
			default:
			}
		}
		for _, tc := range cases {
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(tc.bytes); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if tc.halfClose {
				_ = c.(*net.TCPConn).CloseWrite()
			}
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			n, err := io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("round %d %s: server did not close the connection", round, tc.name)
			}
			if n != 0 {
				t.Fatalf("round %d %s: server answered %d bytes", round, tc.name, n)
			}
			c.Close()
		}
	}

	// ApiVersions at an unknown version: UNSUPPORTED_VERSION in v0 format.
	c := dial(t, ts.addr)
	if _, err := c.conn.Write(sized(header(nil, apiKeyApiVersions, 99, 5))); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	resp := c.recv(req, 5).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != len(apis)-len(internalOnly) {
		t.Fatalf("ApiVersions v99: %v with %d keys", kerr.ErrorForCode(resp.ErrorCode), len(resp.ApiKeys))
	}

	if !producerDone {
		producerErr = <-produced
	}
	if producerErr != nil {
		t.Fatalf("well-behaved producer failed: %v", producerErr)
	}
	var total int64
	tp, _ := ts.b.Topic("steady")
	for i := range tp.Partitions() {
		p, _ := tp.Partition(broker.PartitionID(i))
		total += int64(p.HighWatermark())
	}
	if total != records {
		t.Fatalf("%d records in the log, produced %d", total, records)
	}
}
