package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestReadCommittedModel is A-T4: three transactional producers and one
// plain one write to a partition in random interleavings, each
// transaction ending in a random commit or abort (some still open at the
// end). For every history, a read_committed reader starting at every
// offset — dropping what the aborted list names, as a client does — sees
// exactly the committed and plain records at or after that offset, in
// order, and never reads past the last stable offset. 300 histories;
// STRAND_TXN_HISTORIES sets another count.
func TestReadCommittedModel(t *testing.T) {
	t.Parallel()
	histories := 300
	if n, err := strconv.Atoi(os.Getenv("STRAND_TXN_HISTORIES")); err == nil && n > 0 {
		histories = n
	}
	rng := rand.New(rand.NewPCG(7, 11))
	reads := 0
	for h := range histories {
		reads += checkHistory(t, h, rng)
	}
	t.Logf("%d histories, %d read_committed reads checked: 0 aborted reads, 0 missing committed records", histories, reads)
}

func checkHistory(t *testing.T, h int, rng *rand.Rand) int {
	t.Helper()
	b := open(t, vfs.NewMem(), "/d")
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "m", Partitions: 1})
	p, _ := b.Partition("m", 0)
	ctx := context.Background()

	type pending struct{ values []string }
	open := map[producer.ID]*pending{}
	seq := map[producer.ID]int32{}
	// committedAt maps each record's offset to its value once it is
	// known to be visible (committed or plain).
	visibleAt := map[record.Offset]string{}
	offsetOf := map[string]record.Offset{}
	n := 0
	for step := range 20 + rng.IntN(20) {
		pid := producer.ID(1 + rng.IntN(4)) // 4: plain producer
		v := fmt.Sprintf("h%d-s%d", h, step)
		switch {
		case pid == 4:
			rb, _ := record.Encode(0, []record.Record{{Value: []byte(v)}}, record.DefaultBatchOptions())
			res, err := p.Append(ctx, rb, AcksAll)
			if err != nil {
				t.Fatal(err)
			}
			visibleAt[res.BaseOffset], offsetOf[v] = v, res.BaseOffset
		case open[pid] != nil && rng.IntN(3) == 0:
			commit := rng.IntN(2) == 0
			if err := p.WriteMarker(ctx, pid, 0, commit, 0); err != nil {
				t.Fatal(err)
			}
			if commit {
				for _, cv := range open[pid].values {
					visibleAt[offsetOf[cv]] = cv
				}
			}
			open[pid] = nil
		default:
			opts := record.DefaultBatchOptions()
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = int64(pid), 0, seq[pid], true
			rb, _ := record.Encode(0, []record.Record{{Value: []byte(v)}}, opts)
			seq[pid]++
			res, err := txnAppend(ctx, p, rb, AcksAll)
			if err != nil {
				t.Fatal(err)
			}
			offsetOf[v] = res.BaseOffset
			if open[pid] == nil {
				open[pid] = &pending{}
			}
			open[pid].values = append(open[pid].values, v)
		}
		n++
	}
	lso := p.LastStableOffset()
	for pid, o := range open {
		if o != nil && offsetOf[o.values[0]] < lso {
			t.Fatalf("history %d: LSO %d passes producer %d's open transaction at %d", h, lso, pid, offsetOf[o.values[0]])
		}
	}
	reads := 0
	for from := record.Offset(0); from <= p.HighWatermark(); from++ {
		got := readCommittedFrom(t, p, from)
		var want []string
		for _, o := range slices.Sorted(mapsKeys(visibleAt)) {
			if o >= from && o < lso {
				want = append(want, visibleAt[o])
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("history %d, read_committed from %d (LSO %d): got %q, want %q", h, from, lso, got, want)
		}
		reads++
	}
	return reads
}

// readCommittedFrom reads the partition from offset from to its LSO as a
// read_committed client does, following the log in fetches of one batch.
func readCommittedFrom(t *testing.T, p *Partition, from record.Offset) []string {
	t.Helper()
	var out []string
	for {
		res, aborted, err := p.ReadCommittedInto(nil, from, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Batches) == 0 {
			return out
		}
		for sc := record.Batches(res.Batches); sc.Next(); {
			hd := sc.Header()
			from = hd.NextOffset()
			if hd.IsControl() {
				continue
			}
			dropped := false
			for _, a := range aborted {
				if hd.IsTransactional() && int64(a.ProducerID) == hd.ProducerID && a.FirstOffset <= hd.BaseOffset && hd.BaseOffset <= a.LastOffset {
					dropped = true
				}
			}
			bt, err := record.Decode(sc.Batch())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range bt.Records {
				if !dropped && r.Offset >= from-record.Offset(hd.NumRecords) {
					out = append(out, string(r.Value))
				}
			}
		}
	}
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
