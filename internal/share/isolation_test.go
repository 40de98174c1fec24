package share

import (
	"slices"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/record"
)

// TestAcquireSkipping: offsets named undeliverable are archived as they
// are met, never handed out and never counted as a delivery; the window
// start moves past those at its head.
func TestAcquireSkipping(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name      string
		skip      []Span
		max       int
		want      []Range
		wantStart Offset
	}{
		{name: "nothing skipped", max: 10, want: []Range{{0, 9, 1}}},
		{name: "head skipped", skip: []Span{{0, 2}}, max: 10, want: []Range{{3, 9, 1}}},
		{name: "middle skipped", skip: []Span{{3, 4}, {7, 7}}, max: 10, want: []Range{{0, 2, 1}, {5, 6, 1}, {8, 9, 1}}},
		{name: "skips do not use up max", skip: []Span{{0, 4}}, max: 3, want: []Range{{5, 7, 1}}},
		{name: "all skipped", skip: []Span{{0, 9}}, max: 10, want: nil, wantStart: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(Defaults, 0)
			got := p.AcquireSkipping("m", 10, tc.max, now, tc.skip)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("acquired %v, want %v", got, tc.want)
			}
			if tc.wantStart != 0 && p.Start() != tc.wantStart {
				t.Errorf("start %d, want %d", p.Start(), tc.wantStart)
			}
			for _, sp := range tc.skip {
				for o := sp.First; o <= sp.Last; o++ {
					if st, n := p.StateOf(o); o >= p.Start() && (st != Archived || n != 0) {
						t.Errorf("offset %d is %s with %d deliveries, want archived undelivered", o, st, n)
					}
				}
			}
		})
	}
}

// TestUndeliverable: control batches always, and the batches of aborted
// transactions (by producer, from the first offset to the marker).
func TestUndeliverable(t *testing.T) {
	var log []byte
	add := func(base int64, n int, pid int64, txn, control bool) {
		var rs []record.Record
		for i := range n {
			rs = append(rs, record.Record{Offset: record.Offset(base) + record.Offset(i), Value: []byte("v")})
		}
		b, err := record.Encode(record.Offset(base), rs, record.BatchOptions{ProducerID: pid, Transactional: txn, Control: control})
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, b...)
	}
	add(0, 3, 7, true, false)   // pid 7's committed transaction
	add(3, 1, 7, true, true)    // its commit marker
	add(4, 2, 8, true, false)   // pid 8's aborted transaction
	add(6, 2, 7, true, false)   // pid 7's next (committed) transaction, interleaved
	add(8, 1, 8, true, true)    // pid 8's abort marker
	add(9, 2, -1, false, false) // plain records
	aborted := []AbortedTxn{{ProducerID: 8, First: 4, Last: 8}}
	if got, want := Undeliverable(log, aborted), []Span{{3, 5}, {8, 8}}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %v, want %v", got, want)
	}
	if got, want := Undeliverable(log, nil), []Span{{3, 3}, {8, 8}}; !slices.Equal(got, want) {
		t.Errorf("read_uncommitted: %v, want %v", got, want)
	}
}

// TestKeepBatches: a fetch answers with the batches holding acquired
// offsets only — the read itself when they are one run, a copy of the
// runs otherwise.
func TestKeepBatches(t *testing.T) {
	var log []byte
	var sizes []int
	for i, n := range []int{3, 1, 2, 2} { // offsets 0-2, 3, 4-5, 6-7
		base := []int64{0, 3, 4, 6}[i]
		var rs []record.Record
		for j := range n {
			rs = append(rs, record.Record{Offset: record.Offset(base) + record.Offset(j), Value: []byte("v")})
		}
		b, err := record.Encode(record.Offset(base), rs, record.BatchOptions{ProducerID: -1})
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, b...)
		sizes = append(sizes, len(b))
	}
	at := func(i int) int { // byte position of batch i
		p := 0
		for _, s := range sizes[:i] {
			p += s
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		ranges []Range
		want   []byte
		alias  int // with want one run of the read: where it starts (-1: a copy is fine)
	}{
		{name: "all", ranges: []Range{{0, 7, 1}}, want: log, alias: 0},
		{name: "a middle run", ranges: []Range{{3, 4, 1}}, want: log[at(1):at(3)], alias: at(1)},
		{name: "two runs", ranges: []Range{{1, 1, 1}, {6, 6, 1}}, want: append(append([]byte(nil), log[:at(1)]...), log[at(3):]...), alias: -1},
		{name: "none", ranges: nil, want: nil, alias: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keepBatches(log, tc.ranges)
			if string(got) != string(tc.want) {
				t.Fatalf("kept %d bytes, want %d", len(got), len(tc.want))
			}
			if tc.alias >= 0 && &got[0] != &log[tc.alias] {
				t.Errorf("a single run was copied")
			}
		})
	}
}
