package consumer

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/assign"
)

var t0 = time.Unix(1_700_000_000, 0).UTC()

func str(s string) *string { return &s }

func ps(topic string, parts ...int32) []assign.Partition {
	out := []assign.Partition{}
	for _, p := range parts {
		out = append(out, assign.Partition{Topic: topic, Partition: p})
	}
	return out
}

func joinReq(id string, topics ...string) Request {
	return Request{Version: 1, GroupID: "g", MemberID: id, MemberEpoch: JoinEpoch, RebalanceTimeoutMs: 30_000,
		Topics: append([]string{}, topics...), Owned: []assign.Partition{}}
}

func beatReq(id string, epoch int32, owned []assign.Partition) Request {
	return Request{Version: 1, GroupID: "g", MemberID: id, MemberEpoch: epoch, RebalanceTimeoutMs: -1, Owned: owned}
}

// harness drives one group through the engine, keeping every record, and
// checks after each step that ownership is exclusive, the epochs are ordered
// and replaying the records rebuilds the group.
type harness struct {
	t      testing.TB
	e      *Engine
	g      *Group
	topics map[string]int32
	now    time.Time
	recs   []Record
	// replayed is the group rebuilt by applying recs one step at a time,
	// as Replay does in one go.
	replayed *Group
}

func newHarness(t testing.TB, cfg Config, topics map[string]int32) *harness {
	return &harness{t: t, e: New(cfg), topics: topics, now: t0}
}

func (h *harness) do(req Request) Response {
	h.t.Helper()
	resp, g, recs := h.e.Heartbeat(h.g, req, h.now, h.topics)
	if resp.Code != None && (len(recs) > 0 || g != h.g) {
		h.t.Fatalf("an error changed the group or wrote records: %v %v", resp, recs)
	}
	h.g = g
	h.add(recs)
	return resp
}

// add keeps recs, replays them (through the codec) onto the replayed copy
// and checks the group.
func (h *harness) add(recs []Record) {
	h.t.Helper()
	h.recs = append(h.recs, recs...)
	for _, r := range recs {
		k, v := r.Encode()
		d, err := Decode(k, v)
		if err != nil {
			h.t.Fatalf("decode %+v: %v", r, err)
		}
		if h.replayed == nil {
			h.replayed = NewGroup(d.Group)
		}
		apply(h.replayed, d)
	}
	h.check()
}

func (h *harness) expire() []string {
	h.t.Helper()
	g, recs, gone := h.e.Expire(h.g, h.now)
	h.g = g
	h.add(recs)
	return gone
}

// ok sends req and fails unless it succeeds.
func (h *harness) ok(req Request) Response {
	h.t.Helper()
	resp := h.do(req)
	if resp.Code != None {
		h.t.Fatalf("%s epoch %d: %d %s", req.MemberID, req.MemberEpoch, resp.Code, resp.Message)
	}
	return resp
}

func (h *harness) check() {
	h.t.Helper()
	if h.g == nil {
		return
	}
	h.g.Owners() // panics on double ownership
	checkEpochs(h.t, h.g)
	if !reflect.DeepEqual(canon(h.replayed), canon(h.g)) {
		h.t.Fatalf("replay differs:\n got %s\nwant %s", dump(canon(h.replayed)), dump(canon(h.g)))
	}
}

func checkEpochs(t testing.TB, g *Group) {
	t.Helper()
	if g.AssignmentEpoch > g.Epoch {
		t.Fatalf("assignment epoch %d > group epoch %d", g.AssignmentEpoch, g.Epoch)
	}
	for _, m := range g.Members {
		if m.Epoch > g.AssignmentEpoch {
			t.Fatalf("member %s epoch %d > assignment epoch %d", m.ID, m.Epoch, g.AssignmentEpoch)
		}
	}
}

// canon is g without volatile fields, nil and empty lists made equal.
func canon(g *Group) *Group {
	if g == nil {
		return nil
	}
	c := g.Clone()
	c.MetadataRefresh = time.Time{}
	for _, m := range c.Members {
		m.SessionDeadline, m.RebalanceDeadline = time.Time{}, time.Time{}
		m.Assigned = orEmpty(m.Assigned)
		m.Revoking = orEmpty(m.Revoking)
		m.Topics = orEmptyStrings(m.Topics)
	}
	for id, l := range c.Target {
		c.Target[id] = orEmpty(l)
	}
	return c
}

// checkReplay encodes and decodes every record, replays them and compares.
func checkReplay(t testing.TB, g *Group, recs []Record) {
	t.Helper()
	decoded := make([]Record, 0, len(recs))
	for _, r := range recs {
		k, v := r.Encode()
		d, err := Decode(k, v)
		if err != nil {
			t.Fatalf("decode %+v: %v", r, err)
		}
		decoded = append(decoded, d)
	}
	replayed, err := Replay(g.ID, decoded)
	if err != nil {
		t.Fatal(err)
	}
	got := canon(replayed)
	want := canon(g)
	if got == nil {
		got = canon(NewGroup(g.ID))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("replay differs:\n got %s\nwant %s", dump(got), dump(want))
	}
}

func dump(g *Group) string {
	s := ""
	s += "epoch " + itoa(g.Epoch) + " assignment " + itoa(g.AssignmentEpoch) + "\n"
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[id]
		s += "  " + id + " e" + itoa(m.Epoch) + "/" + itoa(m.PreviousEpoch) + " " + m.State.String() +
			" assigned " + fmtPs(m.Assigned) + " revoking " + fmtPs(m.Revoking) + " target " + fmtPs(g.Target[id]) + "\n"
	}
	return s
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func fmtPs(p []assign.Partition) string {
	s := "["
	for i, q := range p {
		if i > 0 {
			s += " "
		}
		s += q.String()
	}
	return s + "]"
}

func (h *harness) member(id string) *Member {
	h.t.Helper()
	m, ok := h.g.Members[id]
	if !ok {
		h.t.Fatalf("no member %s:\n%s", id, dump(h.g))
	}
	return m
}
