package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// serveFetches answers each Fetch request read from nc with a v15 Fetch
// response carrying the next of sets as one partition's record set.
func serveFetches(t *testing.T, nc net.Conn, sets [][]byte) {
	t.Helper()
	r := bufio.NewReader(nc)
	for _, set := range sets {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			t.Error(err)
			return
		}
		req := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r, req); err != nil {
			t.Error(err)
			return
		}
		corr := binary.BigEndian.Uint32(req[4:8])
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(15)
		rt := kmsg.NewFetchResponseTopic()
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.RecordBatches = set
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		body := binary.BigEndian.AppendUint32(nil, corr)
		body = append(body, 0) // response header v1: no tags
		body = resp.AppendTo(body)
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		if _, err := nc.Write(append(frame, body...)); err != nil {
			t.Error(err)
			return
		}
	}
}

// TestRoundTripBorrowed: a borrowed response decodes as RoundTrip's does;
// the next borrowed round trip reuses its buffer (so the earlier
// response's bytes are overwritten, which is the contract callers keep),
// and a larger response grows the buffer.
func TestRoundTripBorrowed(t *testing.T) {
	t.Parallel()
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	sets := [][]byte{
		bytes.Repeat([]byte{'a'}, 3000),
		bytes.Repeat([]byte{'b'}, 3000),
		bytes.Repeat([]byte{'c'}, 9000),
		bytes.Repeat([]byte{'d'}, 100),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		serveFetches(t, server, sets)
	}()
	c := &Conn{nc: client, r: bufio.NewReaderSize(client, 1024), clientID: "test"}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(15)
	deadline := time.Now().Add(10 * time.Second)
	var prev []byte
	for i, want := range sets {
		kresp, err := c.RoundTripBorrowed(req, deadline)
		if err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		got := kresp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
		if !bytes.Equal(got, want) {
			t.Fatalf("round trip %d: %d bytes starting %q, want %d of %q", i, len(got), got[:1], len(want), want[:1])
		}
		if i == 1 && bytes.Equal(prev, sets[0]) {
			t.Fatal("the second borrowed round trip did not reuse the first's buffer")
		}
		prev = got
	}
	<-done
}
