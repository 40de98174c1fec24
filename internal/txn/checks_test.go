package txn

import (
	"testing"

	"github.com/strandmq/strand/internal/producer"
)

// pendingWorld returns a world whose id "t" (Ongoing, pid 100 epoch 5) has
// an AddPartitions transition pending.
func pendingWorld(t *testing.T, v Version) (*world, *Transit) {
	w := newWorld(t, v)
	w.seed(base(Ongoing))
	out := w.c.AddPartitions(AddRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Partitions: []Partition{{"z", 9}}}, 20)
	if out.Append == nil {
		t.Fatalf("no append: %+v", out)
	}
	return w, out.Append
}

func code(out Output) string {
	if out.Reply == nil {
		return "-"
	}
	return out.Reply.Code.String()
}

// TestInitCheckOrder: each row breaks one more check than the next, so the
// first failing check's code must win (A.3, KafkaApis then
// handleInitProducerId and prepareInitProducerIdTransit).
func TestInitCheckOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		req  InitRequest
		want string
	}{
		{"empty id beats everything", InitRequest{TransactionalID: "", TimeoutMs: 0, ProducerID: 5, Epoch: NoEpoch}, "INVALID_REQUEST"},
		{"half an expected pair beats the timeout", InitRequest{TransactionalID: "t", TimeoutMs: 0, ProducerID: 5, Epoch: NoEpoch}, "INVALID_REQUEST"},
		{"epoch without id", InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: producer.NoID, Epoch: 3}, "INVALID_REQUEST"},
		{"timeout 0 beats pending", InitRequest{TransactionalID: "t", TimeoutMs: 0, ProducerID: producer.NoID, Epoch: NoEpoch}, "INVALID_TRANSACTION_TIMEOUT"},
		{"timeout over max", InitRequest{TransactionalID: "t", TimeoutMs: 60_001, ProducerID: producer.NoID, Epoch: NoEpoch}, "INVALID_TRANSACTION_TIMEOUT"},
		{"pending beats a fenced pair", InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: 77, Epoch: 1}, "CONCURRENT_TRANSACTIONS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w, _ := pendingWorld(t, TV1)
			if got := code(w.c.InitProducerID(c.req, 30)); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestInitExpectedPair(t *testing.T) {
	t.Parallel()
	init := func(w *world, pid producer.ID, epoch producer.Epoch) *Reply {
		return w.run(w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: pid, Epoch: epoch}, 30), 30)
	}
	t.Run("other producer id is fenced", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, TV1)
		w.seed(base(CompleteCommit))
		if r := init(w, 77, 5); r.Code != CodeProducerFenced {
			t.Fatalf("got %v", r.Code)
		}
	})
	t.Run("current epoch bumps and remembers it", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, TV1)
		w.seed(base(CompleteCommit))
		r := init(w, 100, 5)
		if md := w.get("t"); r.Code != CodeNone || r.Epoch != 6 || md.LastEpoch != 5 {
			t.Fatalf("reply %+v, md %v", r, md)
		}
		// the client never heard: it retries with epoch 5 → same answer, no bump
		r = init(w, 100, 5)
		if r.Code != CodeNone || r.Epoch != 6 || w.get("t").Epoch != 6 {
			t.Fatalf("retry: %+v, %v", r, w.get("t"))
		}
		// another epoch is a zombie
		if r := init(w, 100, 3); r.Code != CodeProducerFenced {
			t.Fatalf("stale epoch: %+v", r)
		}
	})
	t.Run("no expected pair fences the last epoch", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, TV1)
		w.seed(base(Empty))
		init(w, producer.NoID, NoEpoch)
		if md := w.get("t"); md.Epoch != 6 || md.LastEpoch != NoEpoch {
			t.Fatalf("%v", md)
		}
		if r := init(w, 100, 5); r.Code != CodeProducerFenced {
			t.Fatalf("old instance re-init: %+v", r)
		}
	})
	t.Run("new id at epoch 0", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, TV2)
		r := init(w, producer.NoID, NoEpoch)
		md := w.get("t")
		if r.Code != CodeNone || r.ProducerID != 1000 || r.Epoch != 0 || md.State != Empty || md.StartMs != -1 {
			t.Fatalf("reply %+v, md %v", r, md)
		}
		checkReplay(t, w)
	})
	t.Run("new id with a pair (KIP-360 after an expiry) gets the fresh id", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, TV2)
		if r := init(w, 55, 3); r.Code != CodeNone || r.ProducerID != 1000 || r.Epoch != 0 {
			t.Fatalf("%+v", r)
		}
	})
}

func TestInitRotatesExhaustedEpoch(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV2)
	md := base(CompleteCommit)
	md.Epoch = maxEpoch - 1
	w.seed(md)
	r := w.run(w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: 100, Epoch: maxEpoch - 1}, 30), 30)
	got := w.get("t")
	if r.Code != CodeNone || r.ProducerID != 1000 || r.Epoch != 0 || got.PreviousProducerID != 100 || got.LastEpoch != maxEpoch-1 {
		t.Fatalf("reply %+v, md %v", r, got)
	}
	// the same request again (response lost): old id is the previous one and
	// its epoch is exhausted → valid; epoch 32766 is LastEpoch → no bump
	r = w.run(w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: 100, Epoch: maxEpoch - 1}, 31), 31)
	if r.Code != CodeNone || r.ProducerID != 1000 || r.Epoch != 0 {
		t.Fatalf("retry: %+v", r)
	}
	checkReplay(t, w)
}

func TestInitIDSourceFailure(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV1)
	w.ids.fail = true
	out := w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: producer.NoID, Epoch: NoEpoch}, 1)
	if code(out) != "COORDINATOR_NOT_AVAILABLE" || out.Append != nil {
		t.Fatalf("%+v", out)
	}
	if _, ok := w.c.Get("t"); ok {
		t.Fatal("an id with nothing written stayed")
	}
}

func TestInitFreshAppendFails(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV1)
	out := w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: producer.NoID, Epoch: NoEpoch}, 1)
	if code(w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: producer.NoID, Epoch: NoEpoch}, 1)) != "CONCURRENT_TRANSACTIONS" {
		t.Fatal("second init while the first is pending")
	}
	if r := w.c.Appended(out.Append, CodeCoordinatorNotAvailable, 2); code(r) != "COORDINATOR_NOT_AVAILABLE" {
		t.Fatalf("%+v", r)
	}
	if _, ok := w.c.Get("t"); ok {
		t.Fatal("a never-written id stayed after its append failed")
	}
}

func TestAddCheckOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		req  AddRequest
		want string
	}{
		{"empty id", AddRequest{TransactionalID: "", ProducerID: 1, Epoch: 1}, "INVALID_REQUEST"},
		{"unknown id", AddRequest{TransactionalID: "nope", ProducerID: 100, Epoch: 5}, "INVALID_PRODUCER_ID_MAPPING"},
		{"other pid beats the epoch", AddRequest{TransactionalID: "t", ProducerID: 101, Epoch: 9}, "INVALID_PRODUCER_ID_MAPPING"},
		{"other epoch beats pending", AddRequest{TransactionalID: "t", ProducerID: 100, Epoch: 4}, "PRODUCER_FENCED"},
		{"pending", AddRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Partitions: []Partition{{"a", 0}}}, "CONCURRENT_TRANSACTIONS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w, _ := pendingWorld(t, TV1)
			if got := code(w.c.AddPartitions(c.req, 30)); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestAddOnlyWritesWhenTheSetGrows(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV1)
	w.seed(base(Ongoing))
	out := w.c.AddPartitions(AddRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Partitions: []Partition{{"a", 0}}}, 30)
	if out.Append != nil || code(out) != "NONE" {
		t.Fatalf("already in: %+v", out)
	}
	w.run(w.c.AddPartitions(AddRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Partitions: []Partition{{"b", 2}, {"a", 0}}}, 40), 40)
	md := w.get("t")
	if len(md.Partitions) != 2 || md.StartMs != 10 || md.LastUpdateMs != 40 {
		t.Fatalf("%v", md)
	}
	// a failed append changes nothing
	out = w.c.AddPartitions(AddRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Partitions: []Partition{{"c", 0}}}, 50)
	if r := w.c.Appended(out.Append, CodeNotCoordinator, 50); code(r) != "NOT_COORDINATOR" {
		t.Fatalf("%+v", r)
	}
	if got := w.get("t"); len(got.Partitions) != 2 || w.c.Pending("t") {
		t.Fatalf("after failure: %v", got)
	}
}

func TestAddOffsetsPartition(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV1)
	w.seed(base(Empty))
	w.run(w.c.AddOffsets("t", 100, 5, "group-1", TV0, 30), 30)
	want := Partition{OffsetsTopic, PartitionFor("group-1", DefaultOffsetsPartitions)}
	if md := w.get("t"); len(md.Partitions) != 1 || md.Partitions[0] != want || md.StartMs != 30 {
		t.Fatalf("%v, want %v", md, want)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV1)
	w.seed(base(Ongoing))
	c, per := w.c.Verify("t", 100, 5, []Partition{{"a", 0}, {"b", 0}})
	if c != CodeNone || per[Partition{"a", 0}] != CodeNone || per[Partition{"b", 0}] != CodeTransactionAbortable {
		t.Fatalf("%v %v", c, per)
	}
	for _, k := range []struct {
		id    string
		pid   producer.ID
		epoch producer.Epoch
		want  Code
	}{{"", 100, 5, CodeInvalidRequest}, {"x", 100, 5, CodeInvalidProducerIDMapping}, {"t", 9, 5, CodeInvalidProducerIDMapping}, {"t", 100, 4, CodeProducerFenced}} {
		if c, _ := w.c.Verify(k.id, k.pid, k.epoch, nil); c != k.want {
			t.Errorf("%+v: %v", k, c)
		}
	}
}

func TestEndCheckOrder(t *testing.T) {
	t.Parallel()
	for _, v := range []Version{TV1, TV2} {
		cases := []struct {
			name string
			req  EndRequest
			want string
		}{
			{"empty id", EndRequest{TransactionalID: ""}, "INVALID_REQUEST"},
			{"unknown id", EndRequest{TransactionalID: "nope", ProducerID: 100, Epoch: 5}, "INVALID_PRODUCER_ID_MAPPING"},
			{"other pid beats the epoch", EndRequest{TransactionalID: "t", ProducerID: 7, Epoch: 1}, "INVALID_PRODUCER_ID_MAPPING"},
			{"other epoch beats pending", EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: 3}, "PRODUCER_FENCED"},
			{"pending", EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Commit: true}, "CONCURRENT_TRANSACTIONS"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				w, _ := pendingWorld(t, v)
				c.req.Client = v
				if got := code(w.c.EndTxn(c.req, 30)); got != c.want {
					t.Fatalf("tv%d: got %s, want %s", v, got, c.want)
				}
			})
		}
	}
}

// TestCommitLifecycle follows one TV2 commit effect by effect.
func TestCommitLifecycle(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV2)
	w.seed(base(Ongoing))
	out := w.c.EndTxn(EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Commit: true, Client: TV2}, 30)
	if out.Reply != nil || out.Append == nil || out.Append.Target.State != PrepareCommit {
		t.Fatalf("EndTxn: %+v", out)
	}
	if md := w.get("t"); md.State != Ongoing || md.Epoch != 5 {
		t.Fatalf("state changed before the append: %v", md)
	}
	out = w.c.Appended(out.Append, CodeNone, 31)
	m := out.Markers
	if out.Reply == nil || out.Reply.Code != CodeNone || out.Reply.ProducerID != 100 || out.Reply.Epoch != 6 {
		t.Fatalf("reply %+v", out.Reply)
	}
	if m == nil || !m.Commit || m.ProducerID != 100 || m.Epoch != 6 || len(m.Partitions) != 1 || m.Complete == nil {
		t.Fatalf("markers %+v", m)
	}
	if md := w.get("t"); md.State != PrepareCommit || !w.c.Pending("t") {
		t.Fatalf("after prepare: %v", md)
	}
	// a failed Complete append leaves PrepareCommit; Resume asks again
	if r := w.c.Appended(m.Complete, CodeCoordinatorNotAvailable, 32); r.Reply != nil {
		t.Fatalf("complete has nobody to answer: %+v", r)
	}
	m2 := w.c.Resume("t", 33)
	if m2 == nil || m2.Epoch != 6 {
		t.Fatalf("resume: %+v", m2)
	}
	w.c.Appended(m2.Complete, CodeNone, 34)
	if md := w.get("t"); md.State != CompleteCommit || md.Epoch != 6 || len(md.Partitions) != 0 || md.LastUpdateMs != 33 {
		t.Fatalf("after complete: %v", md)
	}
}

// TestOverflowRollsProducerID: TV2 EndTxn at epoch 32766 allocates the next
// producer id; markers carry 32767; the client is answered the new id at
// epoch 0; a retry of the same EndTxn succeeds with the new id.
func TestOverflowRollsProducerID(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV2)
	md := base(Ongoing)
	md.Epoch = maxEpoch - 1
	w.seed(md)
	out := w.c.Appended(w.c.EndTxn(EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: maxEpoch - 1, Commit: true, Client: TV2}, 30).Append, CodeNone, 30)
	if out.Reply.ProducerID != 1000 || out.Reply.Epoch != 0 || out.Markers.ProducerID != 100 || out.Markers.Epoch != maxEpoch {
		t.Fatalf("reply %+v markers %+v", out.Reply, out.Markers)
	}
	w.log = append(w.log, out.Markers.Complete.Record())
	w.c.Appended(out.Markers.Complete, CodeNone, 31)
	got := w.get("t")
	if got.ProducerID != 1000 || got.Epoch != 0 || got.PreviousProducerID != 100 || got.NextProducerID != producer.NoID || got.State != CompleteCommit {
		t.Fatalf("%v", got)
	}
	r := w.c.EndTxn(EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: maxEpoch - 1, Commit: true, Client: TV2}, 40)
	if code(r) != "NONE" || r.Reply.ProducerID != 1000 || r.Reply.Epoch != 0 {
		t.Fatalf("retry after overflow: %+v", r.Reply)
	}
	// the overflow survives a reload (tags of value v1)
	w2 := newWorld(t, TV2)
	if _, err := w2.c.Load(w.log[1:], 1, 50); err != nil { // log[0] is the seed's own
		t.Fatal(err)
	}
	if r := w2.c.EndTxn(EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: maxEpoch - 1, Commit: true, Client: TV2}, 60); code(r) != "NONE" {
		t.Fatalf("retry after reload: %+v", r.Reply)
	}
}

// TestFenceAppendFailure: Kafka bumps the fenced epoch in memory before the
// append; when the append fails, the old producer stays fenced and the next
// fence does not bump again (hasFailedEpochFence).
func TestFenceAppendFailure(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV1)
	w.seed(base(Ongoing))
	init := InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: producer.NoID, Epoch: NoEpoch}
	out := w.c.InitProducerID(init, 30)
	if out.Append == nil || out.Append.Target.State != PrepareAbort || out.Append.Target.Epoch != 6 {
		t.Fatalf("%+v", out.Append)
	}
	if c := code(w.c.AddPartitions(AddRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5}, 31)); c != "PRODUCER_FENCED" {
		t.Fatalf("old instance during the fence: %s", c)
	}
	if r := w.c.Appended(out.Append, CodeCoordinatorNotAvailable, 32); code(r) != "COORDINATOR_NOT_AVAILABLE" {
		t.Fatalf("%+v", r)
	}
	if md := w.get("t"); md.State != Ongoing || md.Epoch != 6 {
		t.Fatalf("after the failed fence: %v", md)
	}
	out = w.c.InitProducerID(init, 40)
	if out.Append.Target.Epoch != 6 {
		t.Fatalf("second fence bumped again: %v", out.Append.Target)
	}
	if r := w.run(out, 41); r.Code != CodeConcurrentTransactions {
		t.Fatalf("%+v", r)
	}
	// the client retries InitProducerId and gets epoch 7
	if r := w.run(w.c.InitProducerID(init, 50), 50); r.Code != CodeNone || r.Epoch != 7 {
		t.Fatalf("%+v", r)
	}
}

func TestTimeoutSweep(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV2)
	w.seed(base(Ongoing)) // start 10, timeout 1000
	if outs := w.c.Timeouts(1010); len(outs) != 0 {
		t.Fatalf("aborted at start+timeout: Kafka needs start+timeout < now")
	}
	outs := w.c.Timeouts(1011)
	if len(outs) != 1 || outs[0].Reply != nil || outs[0].Append.Target.State != PrepareAbort {
		t.Fatalf("%+v", outs)
	}
	if again := w.c.Timeouts(2000); len(again) != 0 {
		t.Fatal("a pending id swept twice")
	}
	out := w.c.Appended(outs[0].Append, CodeNone, 1012)
	if out.Reply != nil || out.Markers == nil || out.Markers.Commit || out.Markers.Epoch != 7 {
		t.Fatalf("%+v", out)
	}
	// the zombie's EndTxn is fenced
	if c := code(w.c.EndTxn(EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Commit: true, Client: TV2}, 1013)); c != "PRODUCER_FENCED" {
		t.Fatalf("zombie commit: %s", c)
	}
}

func TestExpirySweep(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV1)
	w.seed(base(CompleteAbort)) // last update 10, expiration 100000
	on := base(Ongoing)
	on.TransactionalID, on.LastUpdateMs = "o", 0
	w.seed(on)
	if outs := w.c.Expire(100_009); len(outs) != 0 {
		t.Fatal("expired early")
	}
	outs := w.c.Expire(100_010)
	if len(outs) != 1 || outs[0].Append.Value != nil || outs[0].Append.Target.TransactionalID != "t" {
		t.Fatalf("%+v", outs)
	}
	if c := code(w.c.InitProducerID(InitRequest{TransactionalID: "t", TimeoutMs: 100, ProducerID: producer.NoID, Epoch: NoEpoch}, 100_011)); c != "CONCURRENT_TRANSACTIONS" {
		t.Fatalf("init during expiry: %s", c)
	}
	w.run(outs[0], 100_012)
	if _, ok := w.c.Get("t"); ok {
		t.Fatal("expired id still there")
	}
	if _, c := w.c.Describe("t"); c != CodeTransactionalIDNotFound {
		t.Fatalf("describe: %v", c)
	}
	if _, c := w.c.Describe(""); c != CodeInvalidRequest {
		t.Fatalf("describe empty: %v", c)
	}
	checkReplay(t, w)
}

func TestLoadResumesPrepared(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV1)
	w.seed(base(Ongoing))
	out := w.c.EndTxn(EndRequest{TransactionalID: "t", ProducerID: 100, Epoch: 5, Commit: false}, 30)
	stale := out.Append
	w.log = append(w.log, stale.Record())
	// the coordinator moves before Appended: a new one loads the log
	ms, err := w.c.Load(w.log, 7, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Commit || ms[0].CoordinatorEpoch != 7 || len(ms[0].Partitions) != 1 {
		t.Fatalf("%+v", ms)
	}
	if r := w.c.Appended(stale, CodeNone, 41); code(r) != "NOT_COORDINATOR" {
		t.Fatalf("stale transit: %+v", r)
	}
	w.c.Appended(ms[0].Complete, CodeNone, 42)
	if md := w.get("t"); md.State != CompleteAbort {
		t.Fatalf("%v", md)
	}
}

func TestForVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		api, version int16
		in, want     Code
	}{
		{APIInitProducerID, 3, CodeProducerFenced, CodeInvalidProducerEpoch},
		{APIInitProducerID, 4, CodeProducerFenced, CodeProducerFenced},
		{APIEndTxn, 1, CodeProducerFenced, CodeInvalidProducerEpoch},
		{APIEndTxn, 2, CodeProducerFenced, CodeProducerFenced},
		{APIAddPartitionsToTxn, 1, CodeProducerFenced, CodeInvalidProducerEpoch},
		{APIAddOffsetsToTxn, 1, CodeProducerFenced, CodeInvalidProducerEpoch},
		{APIAddOffsetsToTxn, 2, CodeProducerFenced, CodeProducerFenced},
		{APIEndTxn, 0, CodeConcurrentTransactions, CodeConcurrentTransactions},
	}
	for _, c := range cases {
		if got := ForVersion(c.api, c.version, c.in); got != c.want {
			t.Errorf("api %d v%d %s → %s, want %s", c.api, c.version, c.in, got, c.want)
		}
	}
}
