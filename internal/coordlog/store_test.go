package coordlog_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// partLog is a partlog.Log as a coordinator's Log, as a single node's
// internal partition is (its high watermark follows its end).
type partLog struct{ l *partlog.Log }

func (p partLog) Name() string { return "test-0" }
func (p partLog) Append(_ context.Context, batch []byte) error {
	_, err := p.l.Append(batch)
	return err
}
func (p partLog) Read(from record.Offset, maxBytes int) ([]byte, error) {
	return p.l.Read(from, maxBytes)
}
func (p partLog) LogStartOffset() record.Offset { return p.l.LogStartOffset() }
func (p partLog) HighWatermark() record.Offset  { return p.l.HighWatermark() }

// TestStoreReplaysWhatItWrote: records appended — plain, tombstones, and
// a producer's transactional ones — come back from Replay in log order
// with their transaction tags, and the transaction's marker comes back as
// a record of its own.
func TestStoreReplaysWhatItWrote(t *testing.T) {
	l, err := partlog.Open(vfs.NewMem(), "/p", partlog.Config{SegmentBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.AssignEpoch(0); err != nil {
		t.Fatal(err)
	}
	s := &coordlog.Store{Log: partLog{l}, Now: time.Now}
	ctx := context.Background()
	if err := s.Append(ctx, []coordlog.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTxn(ctx, 7, 2, []coordlog.Record{{Key: []byte("c"), Value: []byte("3")}}); err != nil {
		t.Fatal(err)
	}
	marker, err := record.EncodeMarker(7, 2, record.Marker{Commit: true}, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(marker); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, nil); err != nil { // nothing to write: no empty batch
		t.Fatal(err)
	}
	var got []string
	err = s.Replay(func(r coordlog.Record) error {
		switch {
		case r.Txn != nil && r.Txn.Marker:
			got = append(got, "marker commit="+map[bool]string{true: "yes", false: "no"}[r.Txn.Commit])
		case r.Txn != nil:
			got = append(got, string(r.Key)+"="+string(r.Value)+" pid 7")
		case r.Value == nil:
			got = append(got, string(r.Key)+" tombstone")
		default:
			got = append(got, string(r.Key)+"="+string(r.Value))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a=1", "b tombstone", "c=3 pid 7", "marker commit=yes"}
	if !slices.Equal(got, want) {
		t.Fatalf("replayed %q, want %q", got, want)
	}
	if end := l.LogEndOffset(); end != 4 {
		t.Fatalf("log end %d, want 4 (three records, one marker, no empty batch)", end)
	}
}
