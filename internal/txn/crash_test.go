package txn

import (
	"testing"

	"github.com/strandmq/strand/internal/producer"
)

// TestCrashAtEveryRecord is the coordinator's half of A-T2: a 3-partition
// transaction is cut after each of its __transaction_state records (the
// partitions' markers are idempotent, so a crash between two markers is the
// PrepareCommit prefix again). A new coordinator loads the prefix, performs
// what Load and the sweeps ask, and must end every prefix in a complete
// state: committed exactly when PrepareCommit was durable, never hanging.
func TestCrashAtEveryRecord(t *testing.T) {
	t.Parallel()
	for _, v := range []Version{TV1, TV2} {
		w := newWorld(t, v)
		now := int64(100)
		r := w.run(w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 1000, ProducerID: producer.NoID, Epoch: NoEpoch}, now), now)
		parts := []Partition{{"a", 0}, {"a", 1}, {"b", 0}}
		for _, p := range parts {
			w.run(w.c.AddPartitions(AddRequest{TransactionalID: "t", ProducerID: r.ProducerID, Epoch: r.Epoch, Partitions: []Partition{p}, Client: v}, now), now)
		}
		w.run(w.c.EndTxn(EndRequest{TransactionalID: "t", ProducerID: r.ProducerID, Epoch: r.Epoch, Commit: true, Client: v}, now), now)
		log := w.log
		if len(log) != 6 { // Empty, Ongoing ×3, PrepareCommit, CompleteCommit
			t.Fatalf("tv%d: %d records", v, len(log))
		}
		for cut := 0; cut <= len(log); cut++ {
			c := New(Config{Version: v, IDs: &counter{next: 5000}, MaxTimeoutMs: 60_000})
			ms, err := c.Load(log[:cut], 2, now+1)
			if err != nil {
				t.Fatalf("tv%d cut %d: %v", v, cut, err)
			}
			committed := cut >= 5 // PrepareCommit is durable
			later := now + 5000   // past the timeout
			for _, out := range c.Timeouts(later) {
				out = c.Appended(out.Append, CodeNone, later)
				ms = append(ms, out.Markers)
			}
			for _, m := range ms {
				// markers go to every partition added before the cut: only
				// those may hold the transaction's data
				if m.Commit != committed || len(m.Partitions) != min(cut-1, len(parts)) || m.CoordinatorEpoch != 2 {
					t.Fatalf("tv%d cut %d: markers %+v", v, cut, m)
				}
				c.Appended(m.Complete, CodeNone, later)
			}
			md, ok := c.Get("t")
			switch {
			case cut == 0:
				if ok {
					t.Fatalf("tv%d cut 0: %v", v, md)
				}
			case cut == 1:
				if md.State != Empty {
					t.Fatalf("tv%d cut 1: %v", v, md)
				}
			case committed && md.State != CompleteCommit, !committed && md.State != CompleteAbort:
				t.Fatalf("tv%d cut %d: ended %v", v, cut, md)
			}
			if c.Pending("t") || len(md.Partitions) != 0 {
				t.Fatalf("tv%d cut %d: hanging %v", v, cut, md)
			}
		}
	}
}
