package txn

import (
	"fmt"
	"testing"

	"github.com/strandmq/strand/internal/producer"
)

// op is one input of the transition table, applied to base(state) (pid 100,
// epoch 5, partition a-0, timeout 1000 ms, started at 10).
type op string

const (
	opInit       op = "Init"
	opAdd        op = "Add"
	opAddOffsets op = "AddOffsets"
	opCommit     op = "Commit"
	opAbort      op = "Abort"
	opCommitOld  op = "CommitEpoch-1" // a retry of an EndTxn whose epoch bump (TV2) was applied
	opAbortOld   op = "AbortEpoch-1"
	opTimeout    op = "Timeout"
)

var ops = []op{opInit, opAdd, opAddOffsets, opCommit, opAbort, opCommitOld, opAbortOld, opTimeout}

// cell is the expected reply (none: "-") and the resting state and epoch
// after every effect was performed.
type cell struct {
	reply string
	state State
	epoch producer.Epoch
}

func apply(w *world, o op, client Version) *Reply {
	const now = 5000 // past start + timeout
	req := func(epoch producer.Epoch, commit bool) Output {
		return w.c.EndTxn(EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: epoch, Commit: commit, Client: client}, now)
	}
	switch o {
	case opInit:
		return w.run(w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 1000, ProducerID: producer.NoID, Epoch: NoEpoch}, now), now)
	case opAdd:
		return w.run(w.c.AddPartitions(AddRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Partitions: []Partition{{"b", 1}}, Client: client}, now), now)
	case opAddOffsets:
		return w.run(w.c.AddOffsets("t", 100, 5, "g", client, now), now)
	case opCommit:
		return w.run(req(5, true), now)
	case opAbort:
		return w.run(req(5, false), now)
	case opCommitOld:
		return w.run(req(4, true), now)
	case opAbortOld:
		return w.run(req(4, false), now)
	case opTimeout:
		var first *Reply
		for _, out := range w.c.Timeouts(now) {
			if r := w.run(out, now); r != nil && first == nil {
				first = r
			}
		}
		return first
	}
	panic(o)
}

// TestTransitionTableTV1 is A-T1 for a TV1 client on a TV1 cluster: every
// resting state × every input. Kafka: endTransactionWithTV1,
// handleAddPartitionsToTransaction, prepareInitProducerIdTransit,
// abortTimedOutTransactions.
func TestTransitionTableTV1(t *testing.T) {
	t.Parallel()
	C, N, ITS, PF := "CONCURRENT_TRANSACTIONS", "NONE", "INVALID_TXN_STATE", "PRODUCER_FENCED"
	table := map[State][]cell{
		//             Init                   Add                   AddOffsets            Commit                      Abort                      CommitOld           AbortOld            Timeout
		Empty:          {{N, Empty, 6}, {N, Ongoing, 5}, {N, Ongoing, 5}, {ITS, Empty, 5}, {ITS, Empty, 5}, {PF, Empty, 5}, {PF, Empty, 5}, {"-", Empty, 5}},
		Ongoing:        {{C, CompleteAbort, 6}, {N, Ongoing, 5}, {N, Ongoing, 5}, {N, CompleteCommit, 5}, {N, CompleteAbort, 5}, {PF, Ongoing, 5}, {PF, Ongoing, 5}, {"-", CompleteAbort, 6}},
		PrepareCommit:  {{C, PrepareCommit, 5}, {C, PrepareCommit, 5}, {C, PrepareCommit, 5}, {C, PrepareCommit, 5}, {ITS, PrepareCommit, 5}, {PF, PrepareCommit, 5}, {PF, PrepareCommit, 5}, {"-", PrepareCommit, 5}},
		PrepareAbort:   {{C, PrepareAbort, 5}, {C, PrepareAbort, 5}, {C, PrepareAbort, 5}, {ITS, PrepareAbort, 5}, {C, PrepareAbort, 5}, {PF, PrepareAbort, 5}, {PF, PrepareAbort, 5}, {"-", PrepareAbort, 5}},
		CompleteCommit: {{N, Empty, 6}, {N, Ongoing, 5}, {N, Ongoing, 5}, {N, CompleteCommit, 5}, {ITS, CompleteCommit, 5}, {PF, CompleteCommit, 5}, {PF, CompleteCommit, 5}, {"-", CompleteCommit, 5}},
		CompleteAbort:  {{N, Empty, 6}, {N, Ongoing, 5}, {N, Ongoing, 5}, {ITS, CompleteAbort, 5}, {N, CompleteAbort, 5}, {PF, CompleteAbort, 5}, {PF, CompleteAbort, 5}, {"-", CompleteAbort, 5}},
	}
	runTable(t, TV1, TV1, table)
}

// TestTransitionTableTV2 is A-T1 for a TV2 client on a TV2 cluster (KIP-890
// part 2: epoch bump per EndTxn, retries recognised by epoch, empty abort).
// A PrepareX / CompleteX base state at epoch 5 was reached from epoch 4, so
// "epoch-1" is the retry and epoch 5 a new request.
func TestTransitionTableTV2(t *testing.T) {
	t.Parallel()
	C, N, ITS, PF := "CONCURRENT_TRANSACTIONS", "NONE", "INVALID_TXN_STATE", "PRODUCER_FENCED"
	table := map[State][]cell{
		//             Init                   Add                   AddOffsets            Commit                      Abort                      CommitOld           AbortOld            Timeout
		Empty:   {{N, Empty, 6}, {N, Ongoing, 5}, {N, Ongoing, 5}, {ITS, Empty, 5}, {N, CompleteAbort, 6}, {PF, Empty, 5}, {PF, Empty, 5}, {"-", Empty, 5}},
		Ongoing: {{C, CompleteAbort, 7}, {N, Ongoing, 5}, {N, Ongoing, 5}, {N, CompleteCommit, 6}, {N, CompleteAbort, 6}, {PF, Ongoing, 5}, {PF, Ongoing, 5}, {"-", CompleteAbort, 7}},
		// Commit/Abort at the epoch just answered on PrepareX: Kafka fences;
		// Strand answers CONCURRENT_TRANSACTIONS (see endV2).
		PrepareCommit:  {{C, PrepareCommit, 5}, {C, PrepareCommit, 5}, {C, PrepareCommit, 5}, {C, PrepareCommit, 5}, {C, PrepareCommit, 5}, {C, PrepareCommit, 5}, {ITS, PrepareCommit, 5}, {"-", PrepareCommit, 5}},
		PrepareAbort:   {{C, PrepareAbort, 5}, {C, PrepareAbort, 5}, {C, PrepareAbort, 5}, {C, PrepareAbort, 5}, {C, PrepareAbort, 5}, {ITS, PrepareAbort, 5}, {C, PrepareAbort, 5}, {"-", PrepareAbort, 5}},
		CompleteCommit: {{N, Empty, 6}, {N, Ongoing, 5}, {N, Ongoing, 5}, {ITS, CompleteCommit, 5}, {N, CompleteAbort, 6}, {N, CompleteCommit, 5}, {ITS, CompleteCommit, 5}, {"-", CompleteCommit, 5}},
		CompleteAbort:  {{N, Empty, 6}, {N, Ongoing, 5}, {N, Ongoing, 5}, {ITS, CompleteAbort, 5}, {N, CompleteAbort, 6}, {ITS, CompleteAbort, 5}, {N, CompleteAbort, 5}, {"-", CompleteAbort, 5}},
	}
	runTable(t, TV2, TV2, table)
}

func runTable(t *testing.T, cluster, client Version, table map[State][]cell) {
	for state, row := range table {
		for i, want := range row {
			o := ops[i]
			t.Run(fmt.Sprintf("%s/%s", state, o), func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, cluster)
				md := base(state)
				md.Client = client
				w.seed(md)
				r := apply(w, o, client)
				got := "-"
				if r != nil {
					got = r.Code.String()
				}
				md = w.get("t")
				if got != want.reply || md.State != want.state || md.Epoch != want.epoch {
					t.Fatalf("%s on %s: reply %s, then %s epoch %d; want %s, %s epoch %d", o, state, got, md.State, md.Epoch, want.reply, want.state, want.epoch)
				}
				if w.c.Pending("t") {
					t.Fatalf("still pending after every effect was performed")
				}
				checkReplay(t, w)
			})
		}
	}
}

// TestUnreachableStates covers the last two states of A-T1: Dead and
// PrepareEpochFence are never written, so a log holding one is corrupt, and
// neither is ever a resting state.
func TestUnreachableStates(t *testing.T) {
	t.Parallel()
	for _, s := range []State{Dead, PrepareEpochFence} {
		md := base(s)
		_, err := Replay([]Record{{Key: EncodeKey("t"), Value: EncodeValue(md, 1)}})
		if err == nil {
			t.Errorf("replay of a %s record: no error", s)
		}
	}
}

// checkReplay asserts that the log replays to the live state.
func checkReplay(t fataler, w *world) {
	t.Helper()
	got, err := Replay(w.log)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, md := range w.c.All() {
		e := w.c.txns[md.TransactionalID]
		if e.failedFence || (e.pending != nil && (e.pending.fresh || e.pending.fence)) {
			delete(got, md.TransactionalID)
			continue // Kafka's deliberate gap: the bump is in memory only
		}
		want := durable(md, w.c.cfg.Version)
		if g, ok := got[md.TransactionalID]; !ok || g.String() != want.String() {
			t.Fatalf("replay %v (%v), live %v", g, ok, want)
		}
		delete(got, md.TransactionalID)
	}
	for id := range got {
		t.Fatalf("replay has %q, the coordinator does not", id)
	}
}

// fataler is what checkReplay needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// durable is what the log keeps of md at the cluster's version.
func durable(md Metadata, v Version) Metadata {
	md.LastEpoch = NoEpoch
	if ValueVersionFor(v) == ValueVersion0 {
		md.PreviousProducerID, md.NextProducerID, md.Client = producer.NoID, producer.NoID, 0
	}
	return md
}
