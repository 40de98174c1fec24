package kafka

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/testcert"
)

// TestFetchSendfile: a consumer reads back, in order and unchanged, records
// of mixed sizes spread over many small segments, in fetches that end
// mid-segment — over plain TCP to another host from the segment files with
// sendfile (here: loopback with zeroCopyLoopback set), and read into
// buffers over loopback and over TLS. Not parallel: it reads the
// process-wide span counters and sets zeroCopyLoopback.
func TestFetchSendfile(t *testing.T) {
	certs := testcert.MustSet(t, "client")
	clientTLS := &tls.Config{RootCAs: certs.CA.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	serverTLS := &tls.Config{Certificates: []tls.Certificate{certs.Server.TLS}, MinVersion: tls.VersionTLS12}
	for _, tc := range []struct {
		name     string
		remote   bool // zeroCopyLoopback: serve loopback as another host
		tls      *tls.Config
		opts     []kgo.Opt
		sendfile bool
	}{
		{"tcp", true, nil, nil, true},
		{"loopback", false, nil, nil, false},
		{"tls", true, serverTLS, []kgo.Opt{kgo.DialTLSConfig(clientTLS)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zeroCopyLoopback.Store(tc.remote)
			t.Cleanup(func() { zeroCopyLoopback.Store(false) })
			ts := startServerTLS(t, broker.Config{}, Config{}, tc.tls)
			createTopic(t, ts.b, "sf", 2, map[string]string{"segment.bytes": "65536"})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			opts := append([]kgo.Opt{kgo.SeedBrokers(ts.addr)}, tc.opts...)
			prod := mustClient(t, append(opts, kgo.DefaultProduceTopic("sf"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
				kgo.ProducerBatchMaxBytes(16<<10),                     // below segment.bytes
				kgo.ProducerBatchCompression(kgo.NoCompression()))...) // span bytes ≥ value bytes
			rng := rand.New(rand.NewPCG(7, 8))
			const n = 3000
			want := make([][]byte, n)
			valueBytes := 0
			for i := range want {
				want[i] = []byte(fmt.Sprintf("%05d:%s", i, bytes.Repeat([]byte{byte('a' + i%26)}, rng.IntN(3000))))
				valueBytes += len(want[i])
				prod.Produce(ctx, &kgo.Record{Value: want[i]}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Error(err)
					}
				})
			}
			if err := prod.Flush(ctx); err != nil || t.Failed() {
				t.Fatal("produce:", err)
			}
			sent, copied := spanStats.sendfile.Load(), spanStats.copied.Load()
			cons := mustClient(t, append(opts, kgo.ConsumeTopics("sf"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchMaxPartitionBytes(20<<10), kgo.FetchMaxBytes(48<<10))...)
			got := map[string][]byte{}
			for len(got) < n && ctx.Err() == nil {
				cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Value[:5])] = r.Value })
			}
			for i, w := range want {
				if g := got[string(w[:5])]; !bytes.Equal(g, w) {
					t.Fatalf("record %d: got %d bytes %.20q…, want %d bytes %.20q…", i, len(g), g, len(w), w)
				}
			}
			sentNow, copiedNow := spanStats.sendfile.Load()-sent, spanStats.copied.Load()-copied
			t.Logf("%d records, %d value bytes: %d span bytes sent with sendfile, %d copied", n, valueBytes, sentNow, copiedNow)
			switch {
			case tc.sendfile && (sentNow < int64(valueBytes) || copiedNow != 0):
				t.Fatalf("span bytes: %d with sendfile, %d copied; want ≥ %d and 0", sentNow, copiedNow, valueBytes)
			case !tc.sendfile && sentNow+copiedNow != 0:
				t.Fatalf("span bytes: %d with sendfile, %d copied; want none (read into buffers)", sentNow, copiedNow)
			}
		})
	}
}

// TestWriteSpanCutShort: a span whose file was truncated after it was
// found (a replica truncating to its new leader) fails the write, with
// sendfile and with the copying path alike, rather than leaving the
// response's frame short on the wire.
func TestWriteSpanCutShort(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "segment"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte("x"), 100<<10)); err != nil {
		t.Fatal(err)
	}
	sp := partlog.Span{File: f, Pos: 1000, Len: 90 << 10}
	if err := f.Truncate(50 << 10); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := writeSpan(c, sp); err == nil {
		t.Fatal("sendfile of a span cut short: no error")
	}
	if err := writeSpan(io.Discard, sp); err == nil {
		t.Fatal("copying a span cut short: no error")
	}
}

// TestFetchRecordBytesCountsSpans: a fetch quota meters a response's record
// bytes, and a partition sent from the segment file counts its span's
// length, not its marker's.
func TestFetchRecordBytesCountsSpans(t *testing.T) {
	t.Parallel()
	resp := &fetchResponse{FetchResponse: kmsg.NewPtrFetchResponse()}
	rt := kmsg.NewFetchResponseTopic()
	read, sent := kmsg.NewFetchResponseTopicPartition(), kmsg.NewFetchResponseTopicPartition()
	read.RecordBatches = make([]byte, 300)
	sent.RecordBatches = resp.addSpan(partlog.Span{Len: 5000})
	rt.Partitions = append(rt.Partitions, read, sent)
	resp.Topics = append(resp.Topics, rt)
	if got := resp.recordBytes(); got != 5300 {
		t.Fatalf("recordBytes = %d, want 300 read + 5000 in a span", got)
	}
}
