package kafka

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

// BenchmarkProduceServer measures the server's side of produce alone: one
// connection keeps produceInFlight pre-encoded requests of 8 MiB of 1 KiB
// incompressible records (spread over the topic's partitions) in flight
// against a broker writing to disk, so the client costs next to nothing.
// Compare partition counts with -bench ProduceServer/partitions=.
func BenchmarkProduceServer(b *testing.B) {
	for _, parts := range []int{1, 8, 64, 1024} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) { benchProduceServer(b, parts) })
	}
}

const produceInFlight = 5 // what franz-go and librdkafka keep per broker

func benchProduceServer(b *testing.B, parts int) {
	ts := startServer(b, broker.Config{}, Config{})
	createTopic(b, ts.b, "bench", int32(parts), nil)
	const requestBytes = 8 << 20
	perBatch := max(1, requestBytes/parts/1024)
	perBatch = min(perBatch, 900) // under max.message.bytes
	value := make([]byte, 1024)
	rand.Read(value)
	recs := make([]record.Record, perBatch)
	for i := range recs {
		recs[i] = record.Record{Offset: record.Offset(i), Timestamp: 1_700_000_000_000, Value: value}
	}
	batch, err := record.Encode(0, recs, record.DefaultBatchOptions())
	if err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	for p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)

	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	slots := make(chan struct{}, produceInFlight)
	wrote := make(chan error, 1)
	go func() {
		for range b.N {
			slots <- struct{}{}
			if _, err := conn.Write(frame); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	br := bufio.NewReader(conn)
	var size [4]byte
	resp := make([]byte, 0, 64<<10)
	for range b.N {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			b.Fatal(err)
		}
		n := binary.BigEndian.Uint32(size[:])
		resp = resp[:n]
		if _, err := io.ReadFull(br, resp); err != nil {
			b.Fatal(err)
		}
		<-slots
	}
	if err := <-wrote; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// Every partition holds every batch: the responses were not errors.
	tp, _ := ts.b.Topic("bench")
	p, _ := tp.Partition(0)
	if got, want := p.HighWatermark(), int64(b.N*perBatch); int64(got) != want {
		b.Fatalf("partition 0 has %d records, want %d", got, want)
	}
}

// BenchmarkProduceRoundTrip is one 1 KiB record produced and acknowledged
// at a time (acks=all) on one connection: the latency path.
func BenchmarkProduceRoundTrip(b *testing.B) {
	ts := startServer(b, broker.Config{}, Config{})
	createTopic(b, ts.b, "rtt", 1, nil)
	value := make([]byte, 1024)
	rand.Read(value)
	batch, err := record.Encode(0, []record.Record{{Timestamp: 1_700_000_000_000, Value: value}}, record.DefaultBatchOptions())
	if err != nil {
		b.Fatal(err)
	}
	req := produceReq("rtt", 0, batch)
	req.SetVersion(9)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	resp := make([]byte, 64<<10)
	b.ResetTimer()
	for range b.N {
		if _, err := conn.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, resp[:4]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, resp[:binary.BigEndian.Uint32(resp)]); err != nil {
			b.Fatal(err)
		}
	}
}
