package producer

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

type step struct {
	name        string
	id          ID
	epoch       Epoch
	first, last int32
	want        error // nil: append (or duplicate, see dup)
	dup         record.Offset
}

func TestCheck(t *testing.T) {
	t.Parallel()
	s := NewState()
	next := record.Offset(0)
	steps := []step{
		{name: "unknown producer, any sequence", id: 1, first: 7, last: 9},
		{name: "in order", id: 1, first: 10, last: 14},
		{name: "retry of the previous", id: 1, first: 10, last: 14, dup: 3},
		{name: "retry of the first", id: 1, first: 7, last: 9, dup: 0},
		{name: "gap", id: 1, first: 16, last: 16, want: ErrOutOfOrderSequence},
		{name: "overlap, not a cached batch", id: 1, first: 12, last: 15, want: ErrOutOfOrderSequence},
		{name: "another producer is independent", id: 2, first: 0, last: 0},
		{name: "new epoch must restart at 0", id: 1, epoch: 1, first: 15, last: 15, want: ErrOutOfOrderSequence},
		{name: "new epoch", id: 1, epoch: 1, first: 0, last: 1},
		{name: "old epoch is fenced", id: 1, epoch: 0, first: 15, last: 15, want: ErrInvalidProducerEpoch},
		{name: "old batch of the old epoch is no duplicate", id: 1, epoch: 0, first: 10, last: 14, want: ErrInvalidProducerEpoch},
		{name: "wrap to MaxInt32", id: 3, first: math.MaxInt32 - 1, last: math.MaxInt32},
		{name: "wraps to 0", id: 3, first: 0, last: 4},
	}
	offsets := map[string]record.Offset{}
	for _, st := range steps {
		cached, dup, err := s.Check(st.id, st.epoch, st.first, st.last)
		switch {
		case st.want != nil:
			if !errors.Is(err, st.want) {
				t.Fatalf("%s: %v, want %v", st.name, err, st.want)
			}
			continue
		case err != nil:
			t.Fatalf("%s: %v", st.name, err)
		case st.dup != 0 || st.name == "retry of the first":
			if !dup || cached.BaseOffset != st.dup {
				t.Fatalf("%s: duplicate=%v at %d, want the batch at %d", st.name, dup, cached.BaseOffset, st.dup)
			}
			continue
		case dup:
			t.Fatalf("%s: unexpected duplicate", st.name)
		}
		n := record.Offset(st.last-st.first) + 1
		if st.last < st.first {
			n = 1
		}
		offsets[st.name] = next
		s.Update(st.id, st.epoch, Batch{FirstSeq: st.first, LastSeq: st.last, BaseOffset: next, LastOffset: next + n - 1})
		next += n
	}
}

func TestOnlyLastFiveBatchesAreCached(t *testing.T) {
	t.Parallel()
	s := NewState()
	for i := range int32(8) {
		s.Update(1, 0, Batch{FirstSeq: i, LastSeq: i, BaseOffset: record.Offset(i), LastOffset: record.Offset(i)})
	}
	for i := range int32(8) {
		_, dup, err := s.Check(1, 0, i, i)
		if i >= 8-CachedBatches && (!dup || err != nil) {
			t.Fatalf("batch %d: dup=%v err=%v, want a duplicate", i, dup, err)
		}
		if i < 8-CachedBatches && !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("batch %d: dup=%v err=%v, want out of order", i, dup, err)
		}
	}
}

// TestObserveRebuildsState: replaying the headers of the batches a State
// accepted (recovery) yields a State that classifies every batch the same.
func TestObserveRebuildsState(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		live := NewState()
		var headers []record.Header
		next := record.Offset(0)
		seqs := map[ID]int32{}
		epochs := map[ID]Epoch{}
		for range rapid.IntRange(1, 60).Draw(t, "batches") {
			id := ID(rapid.IntRange(0, 3).Draw(t, "id"))
			if rapid.IntRange(0, 9).Draw(t, "bump") == 0 {
				epochs[id]++
				seqs[id] = 0
			}
			n := int32(rapid.IntRange(1, 5).Draw(t, "records"))
			first := seqs[id]
			if _, dup, err := live.Check(id, epochs[id], first, first+n-1); err != nil || dup {
				t.Fatalf("in-order batch refused: dup=%v %v", dup, err)
			}
			b := Batch{FirstSeq: first, LastSeq: first + n - 1, BaseOffset: next, LastOffset: next + record.Offset(n) - 1, Timestamp: int64(next)}
			live.Update(id, epochs[id], b)
			headers = append(headers, record.Header{BaseOffset: next, LastOffsetDelta: n - 1, ProducerID: int64(id),
				ProducerEpoch: int16(epochs[id]), BaseSequence: first, NumRecords: n, MaxTimestamp: int64(next)})
			next += record.Offset(n)
			seqs[id] += n
		}
		rebuilt := NewState()
		rebuilt.Observe(record.Header{ProducerID: -1, BaseSequence: -1}) // non-idempotent: ignored
		for _, h := range headers {
			rebuilt.Observe(h)
		}
		raw, err := encodeForTest(rebuilt)
		if err != nil {
			t.Fatal(err)
		}
		fromSnap, _, err := DecodeSnapshot(raw)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			id := ID(rapid.IntRange(0, 4).Draw(t, "probe id"))
			epoch := Epoch(rapid.IntRange(0, 3).Draw(t, "probe epoch"))
			first := int32(rapid.IntRange(0, 40).Draw(t, "probe first"))
			last := first + int32(rapid.IntRange(0, 4).Draw(t, "probe len"))
			a1, d1, e1 := live.Check(id, epoch, first, last)
			for _, other := range []*State{rebuilt, fromSnap} {
				a2, d2, e2 := other.Check(id, epoch, first, last)
				if a1 != a2 || d1 != d2 || (e1 == nil) != (e2 == nil) {
					t.Fatalf("probe %d/%d/%d-%d: live (%v %v %v), rebuilt (%v %v %v)", id, epoch, first, last, a1, d1, e1, a2, d2, e2)
				}
			}
		}
	})
}

// A transactional batch without a sequence (one the broker wrote into a
// producer's transaction: a DLQ quarantine) opens the transaction when
// replayed, as it did when appended, and its marker ends it: recovery
// holds the last stable offset where the live partition did.
func TestObserveSequenceLessTransactionalBatch(t *testing.T) {
	t.Parallel()
	s := NewState()
	s.Observe(record.Header{BaseOffset: 7, ProducerID: 5, ProducerEpoch: 2, BaseSequence: -1,
		Attributes: record.AttrTransactional, NumRecords: 1})
	if first, open := s.OpenTxn(5); !open || first != 7 {
		t.Fatalf("replayed open transaction: %d %v, want first offset 7", first, open)
	}
	if lso := s.LastStable(9); lso != 7 {
		t.Fatalf("LSO %d, want 7 (the open transaction's first offset)", lso)
	}
	if !s.EndTxn(5, 2, 8, false) {
		t.Fatal("the marker found no open transaction")
	}
	if a := s.Aborted(0, 9); len(a) != 1 || a[0].FirstOffset != 7 || a[0].LastOffset != 8 {
		t.Fatalf("aborted index %+v", a)
	}
}

func encodeForTest(s *State) ([]byte, error) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		return nil, err
	}
	if err := SaveSnapshot(fs, "/d", "s.json", 42, s); err != nil {
		return nil, err
	}
	return vfs.ReadFile(fs, "/d/s.json")
}

func TestExpire(t *testing.T) {
	t.Parallel()
	s := NewState()
	s.Update(1, 0, Batch{FirstSeq: 0, LastSeq: 0, Timestamp: 100})
	s.Update(2, 0, Batch{FirstSeq: 0, LastSeq: 0, Timestamp: 300})
	if n := s.Expire(200); n != 1 || s.Len() != 1 {
		t.Fatalf("expired %d, %d left", n, s.Len())
	}
	// An expired producer is unknown: any sequence is accepted.
	if _, _, err := s.Check(1, 0, 50, 50); err != nil {
		t.Fatal(err)
	}
}

// TestAllocatorNeverReuses: ids stay unique across clean reopens and
// crashes that lose everything not synced.
func TestAllocatorNeverReuses(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	seen := map[ID]bool{}
	for round := range 6 {
		a, err := OpenAllocator(fs, "/data")
		if err != nil {
			t.Fatal(err)
		}
		for range IDBlock/2 + round*100 {
			id, err := a.Next()
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] {
				t.Fatalf("round %d: id %d handed out twice", round, id)
			}
			seen[id] = true
		}
		if round%2 == 1 {
			fs = fs.CrashClone(vfs.CrashOptions{})
		}
	}
}
