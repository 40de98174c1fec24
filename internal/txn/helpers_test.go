package txn

import (
	"errors"
	"testing"

	"github.com/strandmq/strand/internal/producer"
)

// counter is an IDSource handing out 1000, 1001, …; fail makes it refuse.
type counter struct {
	next producer.ID
	fail bool
}

func (c *counter) NextProducerID() (producer.ID, error) {
	if c.fail {
		return producer.NoID, errors.New("no block")
	}
	if c.next == 0 {
		c.next = 1000
	}
	c.next++
	return c.next - 1, nil
}

// world is a coordinator plus the log its appends went to.
type world struct {
	t   *testing.T
	c   *Coordinator
	ids *counter
	log []Record
}

func newWorld(t *testing.T, v Version) *world {
	ids := &counter{}
	return &world{t: t, c: New(Config{Version: v, IDs: ids, MaxTimeoutMs: 60_000, ExpirationMs: 100_000}), ids: ids}
}

// seed puts md in place as a resting (not pending) state.
func (w *world) seed(md Metadata) {
	md.Partitions = union(nil, md.Partitions)
	w.c.txns[md.TransactionalID] = &entry{md: md}
	w.log = append(w.log, Record{Key: EncodeKey(md.TransactionalID), Value: EncodeValue(md, ValueVersionFor(w.c.cfg.Version))})
}

// run performs every effect of out successfully (append, markers, complete)
// and returns the first reply, or nil when none.
func (w *world) run(out Output, now int64) *Reply {
	w.t.Helper()
	var first *Reply
	for {
		if out.Reply != nil && first == nil {
			first = out.Reply
		}
		switch {
		case out.Append != nil:
			w.log = append(w.log, out.Append.Record())
			out = w.c.Appended(out.Append, CodeNone, now)
		case out.Markers != nil:
			out = Output{Append: out.Markers.Complete}
		default:
			return first
		}
	}
}

func (w *world) get(id string) Metadata {
	w.t.Helper()
	md, ok := w.c.Get(id)
	if !ok {
		w.t.Fatalf("%q unknown", id)
	}
	return md
}

func base(state State) Metadata {
	md := Metadata{TransactionalID: "t", ProducerID: 100, PreviousProducerID: producer.NoID, NextProducerID: producer.NoID,
		Epoch: 5, LastEpoch: NoEpoch, TimeoutMs: 1000, State: state, StartMs: -1, LastUpdateMs: 10}
	if state == Ongoing || state.prepared() {
		md.Partitions, md.StartMs = []Partition{{"a", 0}}, 10
	}
	if state == CompleteCommit || state == CompleteAbort {
		md.StartMs = 10
	}
	return md
}
