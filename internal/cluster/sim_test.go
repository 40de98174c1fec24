package cluster

import (
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/replica"
)

// A deterministic simulation of the replication core (REPLICATION.md
// §6.1): one partition, three replicas and the controller, no goroutines,
// a fake clock, and a seeded message queue that drops, duplicates, delays
// and reorders every message — fetches and their answers, OffsetForLeaderEpoch,
// AlterPartition, and the metadata images the controller publishes. The
// controller decides with this package's own rules (LeaveISRs, ElectFor,
// UncleanShutdownChanges, CheckAlterPartition; eligible leader replicas on);
// replicas with package replica's (HighWatermark, ShouldJoin, ShouldLeave,
// Truncation, Follower.Fetched). Replicas crash and come back as new
// incarnations: most crashes are clean (the log survives), some unclean
// (an arbitrary unflushed tail is lost, and the new process says so when
// it registers) while another member of the ISR or ELR has its log intact
// (KIP-966's tolerance: min.insync.replicas−1 unclean shutdowns).
// After every step the invariants hold:
//
//	I1 a leader is always a member of its ISR;
//	I2 logs agree below every high watermark ever published;
//	I3 every acknowledged record is on every member of the committed ISR
//	   and ELR (but a crashed replica whose tail is lost, not yet back);
//	I4 at most one replica leads a given epoch;
//	I5 a leader's high watermark never moves back within its epoch;
//	I6 the ISR and the ELR do not overlap, and hold only replicas.
//
// Then the faults stop, and the replicas must converge: one leader, all
// three in its ISR, identical logs.
//
// STRAND_SIM_SEEDS sets the number of seeds (default 2,000; -short 200); a
// failure prints its seed, and STRAND_SIM_SEED=<n> replays one (SIMDEBUG=1
// also logs every controller decision and crash).

type simEntry struct {
	epoch record.Epoch
	val   int
}

type simEpoch struct {
	epoch record.Epoch
	start record.Offset
}

type simReplica struct {
	id       NodeID
	alive    bool
	incarn   int
	log      []simEntry
	epochs   []simEpoch // the leader epoch cache
	hw       record.Offset
	view     PartitionReg // the newest registration it has applied
	viewImg  *Image
	brokerEp int64
	dirty    bool // crashed uncleanly: its tail is lost, and the controller does not know yet
	// As leader of view.LeaderEpoch:
	followers  map[NodeID]*replica.Follower
	epochStart record.Offset
	altering   bool
	alterAt    int // the step its AlterPartition went out
	// As follower:
	truncating bool
	waiting    int // steps until it may send again (an answer may be lost)
}

func (r *simReplica) leo() record.Offset { return record.Offset(len(r.log)) }

func (r *simReplica) leads() bool {
	return r.alive && r.view.Leader == r.id && r.followers != nil
}

// endOffsetFor is partlog's epoch cache answer (Kafka's endOffsetFor).
func (r *simReplica) endOffsetFor(e record.Epoch) replica.EpochEnd {
	if len(r.epochs) == 0 || e == record.NoEpoch || e > r.epochs[len(r.epochs)-1].epoch {
		return replica.EpochEnd{Epoch: record.NoEpoch, End: record.NoOffset}
	}
	if last := r.epochs[len(r.epochs)-1]; e == last.epoch {
		return replica.EpochEnd{Epoch: e, End: r.leo()}
	}
	i := slices.IndexFunc(r.epochs, func(x simEpoch) bool { return x.epoch > e })
	if i == 0 {
		return replica.EpochEnd{Epoch: e, End: r.epochs[0].start}
	}
	return replica.EpochEnd{Epoch: r.epochs[i-1].epoch, End: r.epochs[i].start}
}

func (r *simReplica) latestEpoch() record.Epoch {
	if len(r.epochs) == 0 {
		return record.NoEpoch
	}
	return r.epochs[len(r.epochs)-1].epoch
}

func (r *simReplica) assignEpoch(e record.Epoch) {
	if len(r.epochs) == 0 || r.epochs[len(r.epochs)-1].epoch < e {
		r.epochs = append(r.epochs, simEpoch{e, r.leo()})
	}
}

func (r *simReplica) append(en simEntry) {
	r.assignEpoch(en.epoch)
	r.log = append(r.log, en)
}

// truncate is partlog's TruncateTo: to at or past the end still drops
// the epochs that start there (an election's entry with nothing written).
func (r *simReplica) truncate(to record.Offset) {
	to = min(to, r.leo())
	r.log = r.log[:to]
	i := slices.IndexFunc(r.epochs, func(x simEpoch) bool { return x.start >= to })
	if i >= 0 {
		r.epochs = r.epochs[:i]
	}
	r.hw = min(r.hw, to)
}

type simMsgKind int

const (
	msgFetch simMsgKind = iota
	msgFetchResp
	msgEpochQuery
	msgEpochResp
	msgAlter
	msgAlterResp
	msgImage
)

type simMsg struct {
	kind     simMsgKind
	from, to NodeID // the controller is node 0
	at       int    // deliverable from this step on
	// fetch / epoch query
	epoch      record.Epoch // the sender's view of the leader epoch
	offset     record.Offset
	lastEpoch  record.Epoch
	brokerEp   int64
	incarn     int
	entries    []simEntry
	hw         record.Offset
	diverging  *replica.EpochEnd
	answer     replica.EpochEnd
	alter      AlterPartition
	img        *Image
	alterError bool
	notApplied bool // INELIGIBLE_REPLICA: the controller did not apply it
}

type sim struct {
	t        *testing.T
	rng      *rand.Rand
	seed     uint64
	step     int
	now      time.Time
	img      *Image // the controller's
	topic    TopicID
	reps     map[NodeID]*simReplica
	queue    []simMsg
	nextVal  int
	calm     bool           // no more faults: the network delivers everything once
	lastSeen map[NodeID]int // controller: the step each broker was last heard from
	// elrElections counts leaders elected from the ELR.
	elrElections int
	// unclean counts unclean crashes since the ISR last had
	// min.insync.replicas members with intact logs.
	// Invariant state.
	committed []simEntry                     // the longest log prefix ever below a published high watermark
	acked     map[int]record.Offset          // value → offset acknowledged
	pending   map[int]simPending             // value → where it was appended
	leaderOf  map[record.Epoch]NodeID        // who led each epoch
	hwOf      map[record.Epoch]record.Offset // the leader's published high watermark per epoch
}

type simPending struct {
	leader NodeID
	epoch  record.Epoch
	offset record.Offset
}

// simRules are the controller's: ELR on, min.insync.replicas as the
// replicas use it.
var simRules = Rules{ELR: true, DefaultMinISR: simMinISR}

const (
	simReplicas = 3
	simMinISR   = 2
	simLag      = 5 * time.Second // 50 steps: followers fetch every ~15
	simSession  = 15              // steps without a heartbeat before the controller fences
)

func newSim(t *testing.T, seed uint64) *sim {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 0x5eed)), seed: seed, now: time.Unix(1_000_000, 0),
		reps: map[NodeID]*simReplica{}, lastSeen: map[NodeID]int{}, acked: map[int]record.Offset{},
		pending: map[int]simPending{}, leaderOf: map[record.Epoch]NodeID{}, hwOf: map[record.Epoch]record.Offset{}}
	s.topic = NewTopicID()
	recs := []Record{PutTopic{Topic: Topic{Name: "t", ID: s.topic, Partitions: 1}}}
	for id := NodeID(1); id <= simReplicas; id++ {
		recs = append(recs, RegisterBroker{ID: id, IncarnationID: "i0"})
	}
	s.apply(recs...)
	var unfence []Record
	for id := NodeID(1); id <= simReplicas; id++ {
		b, _ := s.img.Broker(id)
		unfence = append(unfence, BrokerRegistrationChange{ID: id, Epoch: b.Epoch, Fenced: -1})
		s.reps[id] = &simReplica{id: id, alive: true, hw: 0, brokerEp: b.Epoch, view: PartitionReg{Leader: NoLeader, LeaderEpoch: -1}}
	}
	all := []NodeID{1, 2, 3}
	unfence = append(unfence, Partition{TopicID: s.topic, PartitionID: 0, Replicas: all, ISR: all, Leader: 1})
	s.apply(unfence...)
	s.publish()
	return s
}

func (s *sim) apply(recs ...Record) {
	if s.img == nil {
		s.img = NewImage("sim")
	}
	next, err := s.img.WithAt(s.img.Index()+1, recs...)
	if err != nil {
		s.fail("controller: apply %+v: %v", recs, err)
	}
	if s.topic != (TopicID{}) {
		before, _ := s.img.Partition(s.topic, 0)
		after, _ := next.Partition(s.topic, 0)
		if after.Leader != before.Leader && slices.Contains(before.ELR, after.Leader) {
			s.elrElections++
		}
	}
	s.img = next
	if os.Getenv("SIMDEBUG") != "" {
		reg, _ := next.Partition(s.topic, 0)
		s.t.Logf("step %d: %+v -> leader %d epoch %d ISR %v ELR %v LKE %v", s.step, recs, reg.Leader, reg.LeaderEpoch, reg.ISR, reg.ELR, reg.LastKnownELR)
	}
}

func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d, step %d: "+format+" (replay: STRAND_SIM_SEED=%d go test -run TestReplicationSimulation ./internal/cluster)", append(append([]any{s.seed, s.step}, args...), s.seed)...)
}

// send queues m with a random delay; some messages are lost, some twice.
func (s *sim) send(m simMsg) {
	if s.calm {
		m.at = s.step
		s.queue = append(s.queue, m)
		return
	}
	if s.rng.IntN(100) < 8 && m.kind != msgImage { // the metadata log loses nothing (raft): images are only late
		return
	}
	m.at = s.step + s.rng.IntN(4)
	s.queue = append(s.queue, m)
	if s.rng.IntN(100) < 4 {
		d := m
		d.at += s.rng.IntN(6)
		s.queue = append(s.queue, d)
	}
}

// publish sends the controller's image to every replica.
func (s *sim) publish() {
	for id := NodeID(1); id <= simReplicas; id++ { // in order: maps would make runs differ
		s.send(simMsg{kind: msgImage, from: 0, to: id, img: s.img})
	}
}

func (s *sim) reg() PartitionReg {
	reg, _ := s.img.Partition(s.topic, 0)
	return reg
}

// run performs n random steps, checking the invariants after each.
func (s *sim) run(n int) {
	for s.step = 0; s.step < n; s.step++ {
		s.now = s.now.Add(100 * time.Millisecond)
		switch k := s.rng.IntN(100); {
		case k < 50:
			_ = s.deliver()
		case k < 65:
			s.produce()
		case k < 92:
			s.tickReplica(NodeID(1 + s.rng.IntN(simReplicas)))
		case k < 93:
			s.crash(NodeID(1+s.rng.IntN(simReplicas)), s.rng.IntN(3) == 0)
		case k < 96:
			s.restart(NodeID(1 + s.rng.IntN(simReplicas)))
		default:
			s.controllerTick()
		}
		s.check()
	}
}

// deliver hands one due message, chosen at random, to its receiver; false
// when none is due.
func (s *sim) deliver() bool {
	var ready []int
	for i, m := range s.queue {
		if m.at <= s.step {
			ready = append(ready, i)
		}
	}
	if len(ready) == 0 {
		return false
	}
	i := ready[s.rng.IntN(len(ready))] // any ready message: reordering
	m := s.queue[i]
	s.queue = slices.Delete(s.queue, i, i+1)
	if m.to == 0 {
		s.controllerReceive(m)
		return true
	}
	r := s.reps[m.to]
	answer := m.kind == msgFetchResp || m.kind == msgEpochResp || m.kind == msgAlterResp
	if !r.alive || (answer && m.incarn != r.incarn) {
		return true // a dead process, or an answer to a previous incarnation's request
	}
	switch m.kind {
	case msgImage:
		s.applyImage(r, m.img)
	case msgFetch:
		s.leaderFetch(r, m)
	case msgFetchResp:
		s.followerFetched(r, m)
	case msgEpochQuery:
		s.leaderEpochQuery(r, m)
	case msgEpochResp:
		s.followerTruncate(r, m)
	case msgAlterResp:
		if r.leads() && r.view.LeaderEpoch == int32(m.epoch) {
			r.alterDone(m.notApplied)
		}
	}
	return true
}

// applyImage is the reconciler: a newer registration changes the role.
func (s *sim) applyImage(r *simReplica, img *Image) {
	if b, _ := img.Broker(r.id); b.Epoch != r.brokerEp {
		// An image that already fences this incarnation, or one from before
		// its registration (a broker serves only once its image holds it).
		return
	}
	if r.viewImg == nil || img.Index() > r.viewImg.Index() {
		r.viewImg = img // brokers' registrations: who is eligible
	}
	reg, _ := img.Partition(s.topic, 0)
	if reg.LeaderEpoch < r.view.LeaderEpoch || (reg.LeaderEpoch == r.view.LeaderEpoch && reg.PartitionEpoch <= r.view.PartitionEpoch) {
		return
	}
	newEpoch := reg.LeaderEpoch != r.view.LeaderEpoch
	r.view = reg.clone()
	switch {
	case reg.Leader == r.id && newEpoch:
		r.assignEpoch(record.Epoch(reg.LeaderEpoch))
		r.epochStart = r.leo()
		r.followers = map[NodeID]*replica.Follower{}
		for _, id := range reg.Replicas {
			if id != r.id {
				r.followers[id] = &replica.Follower{ID: int32(id), LEO: record.NoOffset, InISR: slices.Contains(reg.ISR, id)}
			}
		}
		r.altering = false
		if prev, ok := s.leaderOf[record.Epoch(reg.LeaderEpoch)]; ok && prev != r.id {
			s.fail("I4: epoch %d led by %d and %d", reg.LeaderEpoch, prev, r.id)
		}
		s.leaderOf[record.Epoch(reg.LeaderEpoch)] = r.id
	case reg.Leader == r.id:
		for id, f := range r.followers {
			f.InISR, f.PendingJoin, f.PendingLeave = slices.Contains(reg.ISR, id), false, false
		}
		r.altering = false
	default:
		r.followers = nil
		if newEpoch {
			r.truncating, r.waiting = true, 0
		}
	}
	if r.leads() {
		s.advanceHW(r)
	}
}

func (s *sim) advanceHW(r *simReplica) {
	in := replica.HighWatermarkInput{Current: r.hw, LeaderLEO: r.leo(), CommittedISR: len(r.view.ISR), Replicas: len(r.view.Replicas),
		MinISR: simMinISR, Now: s.now, Lag: simLag}
	for _, f := range r.followers {
		b, ok := r.viewImg.Broker(f.ID)
		f.Eligible = f.Eligible && ok && !b.Fenced && b.Epoch == f.BrokerEpoch
		in.Followers = append(in.Followers, *f)
	}
	if hw := replica.HighWatermark(in); hw > r.hw {
		r.hw = hw
		s.published(r)
	}
}

// published records a leader's new high watermark for I2, I5 and acks.
func (s *sim) published(r *simReplica) {
	e := record.Epoch(r.view.LeaderEpoch)
	if prev, ok := s.hwOf[e]; ok && r.hw < prev {
		s.fail("I5: the high watermark of epoch %d went back from %d to %d", e, prev, r.hw)
	}
	s.hwOf[e] = r.hw
	prefix := r.log[:r.hw]
	n := min(len(prefix), len(s.committed))
	if !slices.Equal(prefix[:n], s.committed[:n]) {
		s.fail("I2: leader %d publishes high watermark %d over %v, but %v was committed", r.id, r.hw, prefix, s.committed)
	}
	if len(prefix) > len(s.committed) {
		s.committed = slices.Clone(prefix)
	}
	for val, p := range s.pending {
		if p.leader == r.id && p.epoch == e && p.offset < r.hw {
			s.acked[val] = p.offset
			delete(s.pending, val)
		}
	}
}

func (s *sim) produce() {
	for id := NodeID(1); id <= simReplicas; id++ {
		r := s.reps[id]
		if !r.leads() || len(r.view.ISR) < simMinISR { // NOT_ENOUGH_REPLICAS
			continue
		}
		s.nextVal++
		e := record.Epoch(r.view.LeaderEpoch)
		r.append(simEntry{epoch: e, val: s.nextVal})
		s.pending[s.nextVal] = simPending{leader: r.id, epoch: e, offset: r.leo() - 1}
		s.advanceHW(r)
		return
	}
}

// tickReplica: a follower fetches (or asks where its epoch ends); a
// leader checks for followers to take out of the ISR.
func (s *sim) tickReplica(id NodeID) {
	r := s.reps[id]
	if !r.alive {
		return
	}
	s.lastSeen[id] = s.step // its heartbeat
	if r.leads() {
		if r.altering && s.step-r.alterAt > 30 { // the answer is lost: the outcome is unknown
			r.alterDone(false)
		}
		if r.altering {
			return
		}
		if isr, ok := unresolved(r); ok {
			s.alter(r, isr)
			return
		}
		isr := slices.Clone(r.view.ISR)
		changed := false
		for fid, f := range r.followers {
			if replica.ShouldLeave(*f, r.leo(), s.now, simLag) {
				f.PendingLeave, changed = true, true
				isr = slices.DeleteFunc(isr, func(x NodeID) bool { return x == fid })
			}
		}
		if changed {
			s.alter(r, isr)
		}
		return
	}
	if r.view.Leader == NoLeader || r.view.Leader == r.id {
		return
	}
	if r.waiting > 0 {
		r.waiting--
		return
	}
	r.waiting = 3
	m := simMsg{from: id, to: r.view.Leader, epoch: record.Epoch(r.view.LeaderEpoch), brokerEp: r.brokerEp, incarn: r.incarn}
	if r.truncating {
		if r.latestEpoch() == record.NoEpoch {
			r.truncating = false
			return
		}
		m.kind, m.lastEpoch = msgEpochQuery, r.latestEpoch()
	} else {
		m.kind, m.offset, m.lastEpoch = msgFetch, r.leo(), r.latestEpoch()
	}
	s.send(m)
}

// alterDone ends an AlterPartition. As the broker (and Kafka), only a
// refusal that says the change was not applied drops the pending members;
// otherwise they count until the metadata settles them, and the leader
// asks again (its next tick) if it never does.
func (r *simReplica) alterDone(notApplied bool) {
	r.altering = false
	if notApplied {
		for _, f := range r.followers {
			f.PendingJoin, f.PendingLeave = false, false
		}
	}
}

// unresolved is the broker's leaderState.unresolved.
func unresolved(r *simReplica) ([]NodeID, bool) {
	isr, pending := slices.Clone(r.view.ISR), false
	for id := NodeID(1); id <= simReplicas; id++ {
		f := r.followers[id]
		switch {
		case f == nil:
		case f.PendingJoin:
			isr, pending = append(isr, id), true
		case f.PendingLeave:
			isr, pending = slices.DeleteFunc(isr, func(x NodeID) bool { return x == id }), true
		}
	}
	return isr, pending
}

func (s *sim) alter(r *simReplica, isr []NodeID) {
	r.altering, r.alterAt = true, s.step
	var epochs []int64
	for _, id := range isr {
		e := r.brokerEp
		if f := r.followers[id]; f != nil {
			e = f.BrokerEpoch
		}
		epochs = append(epochs, e)
	}
	s.send(simMsg{kind: msgAlter, from: r.id, to: 0, epoch: record.Epoch(r.view.LeaderEpoch), incarn: r.incarn, alter: AlterPartition{
		Broker: r.id, BrokerEpoch: r.brokerEp, TopicID: s.topic, LeaderEpoch: r.view.LeaderEpoch, PartitionEpoch: r.view.PartitionEpoch, ISR: isr, ISREpochs: epochs}})
}

func (s *sim) leaderEpochQuery(r *simReplica, m simMsg) {
	if !r.leads() || int32(m.epoch) != r.view.LeaderEpoch {
		return // FENCED_LEADER_EPOCH / NOT_LEADER: the follower waits for metadata
	}
	s.send(simMsg{kind: msgEpochResp, from: r.id, to: m.from, epoch: m.epoch, incarn: m.incarn, answer: r.endOffsetFor(m.lastEpoch)})
}

func (s *sim) followerTruncate(r *simReplica, m simMsg) {
	if r.leads() || !r.truncating || int32(m.epoch) != r.view.LeaderEpoch {
		return
	}
	to, again := replica.Truncation(m.answer, r.endOffsetFor(m.answer.Epoch), r.leo(), r.hw)
	r.truncate(to)
	r.truncating, r.waiting = again, 0
}

func (s *sim) leaderFetch(r *simReplica, m simMsg) {
	if !r.leads() || int32(m.epoch) != r.view.LeaderEpoch {
		return
	}
	f := r.followers[m.from]
	if b, ok := r.viewImg.Broker(m.from); f == nil || !ok || b.Epoch > m.brokerEp {
		return
	}
	resp := simMsg{kind: msgFetchResp, from: r.id, to: m.from, epoch: m.epoch, incarn: m.incarn, offset: m.offset, hw: r.hw}
	if m.lastEpoch != record.NoEpoch {
		if end := r.endOffsetFor(m.lastEpoch); end.Epoch < m.lastEpoch || end.End < m.offset {
			resp.diverging = &end
			s.send(resp)
			return
		}
	}
	if m.offset > r.leo() {
		return // out of range: cannot happen after truncation; a stale fetch
	}
	resp.entries = slices.Clone(r.log[m.offset:])
	f.Fetched(m.offset, r.leo(), s.now)
	b, _ := r.viewImg.Broker(m.from)
	f.BrokerEpoch, f.Eligible = m.brokerEp, !b.Fenced && b.Epoch == m.brokerEp
	if !r.altering && replica.ShouldJoin(*f, r.hw, r.epochStart) {
		f.PendingJoin = true
		s.alter(r, append(slices.Clone(r.view.ISR), m.from))
	}
	s.advanceHW(r)
	resp.hw = r.hw
	s.send(resp)
}

func (s *sim) followerFetched(r *simReplica, m simMsg) {
	if r.leads() || r.truncating || int32(m.epoch) != r.view.LeaderEpoch {
		return
	}
	r.waiting = 0
	if m.diverging != nil {
		to, again := replica.Truncation(*m.diverging, r.endOffsetFor(m.diverging.Epoch), r.leo(), r.hw)
		r.truncate(to)
		r.truncating = again
		return
	}
	if m.offset != r.leo() {
		return // a stale or duplicated answer
	}
	for _, e := range m.entries {
		r.append(e)
	}
	r.hw = max(r.hw, min(m.hw, r.leo()))
}

// crash stops a replica; an unclean crash also loses an arbitrary tail
// of its log (unflushed) — unless no other member of the ISR and ELR has
// its log intact, more than KIP-966 tolerates (min.insync.replicas−1
// unclean shutdowns while the ISR is short).
func (s *sim) crash(id NodeID, unclean bool) {
	r := s.reps[id]
	if !r.alive {
		return
	}
	r.alive, r.followers, r.altering = false, nil, false
	if os.Getenv("SIMDEBUG") != "" {
		s.t.Logf("step %d: crash %d unclean %v", s.step, id, unclean)
	}
	if unclean && s.otherIntactHolder(id) {
		r.dirty = true
		r.truncate(record.Offset(s.rng.IntN(len(r.log) + 1)))
		r.hw = min(r.hw, r.leo())
	}
}

func (s *sim) restart(id NodeID) {
	r := s.reps[id]
	if r.alive {
		return
	}
	r.alive, r.incarn = true, r.incarn+1
	r.view, r.viewImg, r.truncating = PartitionReg{Leader: NoLeader, LeaderEpoch: -1}, nil, false
	// A new process registers (the controller fences the old one first if
	// it was live) and is unfenced: its broker epoch is new.
	s.apply(leaveISRsRecords(s.img, id)...)
	s.apply(RegisterBroker{ID: id, IncarnationID: "i" + strconv.Itoa(r.incarn)})
	if r.dirty { // no clean-shutdown marker: out of every ISR and ELR
		s.apply(UncleanShutdownChanges(s.img, simRules, id)...)
		r.dirty = false
	}
	b, _ := s.img.Broker(id)
	r.brokerEp = b.Epoch
	s.apply(append([]Record{BrokerRegistrationChange{ID: id, Epoch: b.Epoch, Fenced: -1}}, ElectFor(s.img, simRules, id)...)...)
	s.lastSeen[id] = s.step
	s.publish()
}

// leaveISRsRecords takes a broker out of every ISR, fenced (a no-op if it
// is out already).
func leaveISRsRecords(img *Image, id NodeID) []Record {
	b, _ := img.Broker(id)
	return append([]Record{BrokerRegistrationChange{ID: id, Epoch: b.Epoch, Fenced: 1}}, LeaveISRs(img, simRules, id)...)
}

// controllerTick fences a broker whose session expired.
func (s *sim) controllerTick() {
	for id := NodeID(1); id <= simReplicas; id++ {
		r := s.reps[id]
		b, _ := s.img.Broker(id)
		if r.alive || b.Fenced || s.step-s.lastSeen[id] < simSession {
			continue
		}
		s.apply(leaveISRsRecords(s.img, id)...)
		s.publish()
		return
	}
}

func (s *sim) controllerReceive(m simMsg) {
	if m.kind != msgAlter {
		return
	}
	ch, err := CheckAlterPartition(s.img, simRules, m.alter)
	if err == nil {
		s.apply(ch)
		s.publish()
	}
	s.send(simMsg{kind: msgAlterResp, from: 0, to: m.from, epoch: m.epoch, incarn: m.incarn, alterError: err != nil,
		notApplied: errors.Is(err, ErrIneligibleReplica)})
}

// otherIntactHolder reports whether a member of the ISR or ELR other
// than id has lost nothing.
func (s *sim) otherIntactHolder(id NodeID) bool {
	reg := s.reg()
	for _, h := range append(slices.Clone(reg.ISR), reg.ELR...) {
		if h != id && !s.reps[h].dirty {
			return true
		}
	}
	return false
}

// check asserts I1–I3 and I6 (I4 and I5 are checked where they could
// break).
func (s *sim) check() {
	reg := s.reg()
	if reg.Leader != NoLeader && !slices.Contains(reg.ISR, reg.Leader) {
		s.fail("I1: leader %d outside the ISR %v", reg.Leader, reg.ISR)
	}
	for _, id := range reg.ELR {
		if slices.Contains(reg.ISR, id) || !slices.Contains(reg.Replicas, id) {
			s.fail("I6: ELR %v overlaps the ISR %v or holds a non-replica (%v)", reg.ELR, reg.ISR, reg.Replicas)
		}
	}
	for _, r := range s.reps {
		n := min(int(r.hw), len(r.log), len(s.committed))
		if !slices.Equal(r.log[:n], s.committed[:n]) {
			s.fail("I2: replica %d's log below its high watermark %d is %v, the committed log %v", r.id, r.hw, r.log[:n], s.committed[:n])
		}
	}
	for val, off := range s.acked {
		for _, id := range append(slices.Clone(reg.ISR), reg.ELR...) {
			l := s.reps[id].log
			if !s.reps[id].dirty && (int(off) >= len(l) || l[off].val != val) {
				s.fail("I3: acknowledged record %d at offset %d is not on ISR/ELR member %d (log %v, ISR %v, ELR %v)", val, off, id, l, reg.ISR, reg.ELR)
			}
		}
	}
}

// heal ends the faults: every replica runs again, nothing is lost, and
// after enough steps the replicas must have converged — one leader, every
// replica in its ISR, identical logs, the high watermark at the end
// (liveness: a follower that cannot truncate or catch up fails here).
func (s *sim) heal(steps int) {
	s.calm = true
	for id := NodeID(1); id <= simReplicas; id++ {
		s.restart(id)
	}
	for i := 0; i < steps; i++ {
		s.step++
		s.now = s.now.Add(100 * time.Millisecond)
		for range 1000 { // everything due now, and what it causes
			if !s.deliver() {
				break
			}
		}
		for id := NodeID(1); id <= simReplicas; id++ {
			s.reps[id].waiting = 0
			s.tickReplica(id)
		}
		s.controllerTick()
		s.check()
	}
	reg := s.reg()
	if reg.Leader == NoLeader || len(reg.ISR) != simReplicas {
		for _, r := range s.reps {
			s.t.Logf("replica %d: alive %v view %+v truncating %v log %v epochs %v hw %d brokerEp %d", r.id, r.alive, r.view, r.truncating, r.log, r.epochs, r.hw, r.brokerEp)
			if r.followers != nil {
				for id, f := range r.followers {
					s.t.Logf("  follower %d: %+v", id, *f)
				}
			}
		}
		s.fail("not converged after healing: leader %d, ISR %v", reg.Leader, reg.ISR)
	}
	leader := s.reps[reg.Leader]
	for _, r := range s.reps {
		if !slices.Equal(r.log, leader.log) {
			s.fail("not converged after healing: replica %d's log %v, leader %d's %v", r.id, r.log, leader.id, leader.log)
		}
	}
	if leader.hw != leader.leo() {
		s.fail("not converged after healing: the leader's high watermark %d, its log end %d", leader.hw, leader.leo())
	}
}

func TestReplicationSimulation(t *testing.T) {
	seeds := 2000
	if testing.Short() {
		seeds = 200
	}
	if v := os.Getenv("STRAND_SIM_SEEDS"); v != "" {
		seeds, _ = strconv.Atoi(v)
	}
	first := uint64(1)
	if v := os.Getenv("STRAND_SIM_SEED"); v != "" {
		n, _ := strconv.ParseUint(v, 10, 64)
		first, seeds = n, 1
	}
	var acked, epochs, elr int
	for seed := first; seed < first+uint64(seeds); seed++ {
		s := newSim(t, seed)
		s.run(600)
		s.heal(200)
		acked += len(s.acked)
		epochs += len(s.leaderOf)
		elr += s.elrElections
	}
	if acked == 0 || epochs <= seeds || seeds >= 100 && elr == 0 {
		t.Fatalf("the simulation acknowledged %d records and elected %d leaders (%d from the ELR) over %d seeds: it exercises nothing", acked, epochs, elr, seeds)
	}
	t.Logf("%d seeds × 600 steps: %d records acknowledged, %d leader epochs, %d leaders elected from the ELR", seeds, acked, epochs, elr)
}
