package share

import (
	"errors"
	"fmt"
	"time"
)

// Offset is a record's offset in its topic-partition.
type Offset int64

// State is a record's delivery state in a share-partition. The values are
// Kafka's RecordState codes, which __share_group_state stores.
type State int8

// The delivery states (Kafka's RecordState: AVAILABLE 0, ACQUIRED 1,
// ACKNOWLEDGED 2, ARCHIVED 4).
const (
	Available    State = 0
	Acquired     State = 1
	Acknowledged State = 2
	Archived     State = 4
)

func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	case Archived:
		return "archived"
	}
	return fmt.Sprintf("state(%d)", int8(s))
}

// done reports whether a state is final: such an offset never changes again.
func (s State) done() bool { return s == Acknowledged || s == Archived }

// AckType is an acknowledgement's kind, as ShareFetch and ShareAcknowledge
// carry it (KIP-932; renew is KIP-1222).
type AckType int8

// The acknowledgement types.
const (
	AckGap     AckType = 0 // the offset holds no record for the consumer (a marker, a compacted gap)
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4
)

// Sentinel errors; the kafka package maps them to error codes.
var (
	// ErrInvalidRecordState: an acknowledgement names an offset that is not
	// acquired by the member (Kafka's INVALID_RECORD_STATE).
	ErrInvalidRecordState = errors.New("share: record not acquired by this member")
	// ErrInvalidRequest: a malformed acknowledgement (bad range or type).
	ErrInvalidRequest = errors.New("share: invalid acknowledgement")
)

// Reason says why a record was archived without being accepted; a Dead
// record carries it to the dead-letter topic.
type Reason string

// The reasons a record is given up on.
const (
	ReasonRejected      Reason = "rejected"
	ReasonDeliveryLimit Reason = "delivery-count-limit"
)

// Dead is a record the share-partition archived without its acceptance: a
// consumer rejected it, or it reached the delivery-count limit (released or
// its lock expired once too often). Dead-letter routing writes it.
type Dead struct {
	Offset  Offset
	Count   int16  // deliveries so far
	Reason  Reason // why
	Member  string // the member that rejected or last held it
	Expired bool   // the last delivery ended with a lock expiry (else a release or a reject)
}

// Config holds the share-partition settings (Kafka's names in comments).
type Config struct {
	LockDuration   time.Duration // share.record.lock.duration.ms, default 30 s
	DeliveryLimit  int16         // share.delivery.count.limit, default 5
	MaxRecordLocks int           // group.share.partition.max.record.locks, default 2000
}

// Defaults are Kafka 4.2's defaults.
var Defaults = Config{LockDuration: 30 * time.Second, DeliveryLimit: 5, MaxRecordLocks: 2000}

// Range is a run of offsets [First, Last] acquired in one go with the same
// delivery count, as ShareFetch's AcquiredRecords reports them.
type Range struct {
	First, Last Offset
	Count       int16
}

// slot is one offset's state. It holds no pointers (the member is an
// index into the partition's members, the times ticks), so
// that copying a window of them — every change clones it — is a plain
// memory copy the garbage collector never scans.
type slot struct {
	state    State
	count    int16
	member   int32 // index in Partition.members; 0: none
	deadline tick  // the lock's end
	since    tick  // when the current acquisition began (its lock's age)
}

// tick is a time as nanoseconds since clockBase: monotonic where the clock
// is (time.Now's readings), so a wall-clock step moves no lock.
type tick int64

var clockBase = time.Now()

func tickOf(t time.Time) tick { return tick(t.Sub(clockBase)) }

// time returns t as a time.Time that keeps clockBase's monotonic reading,
// so comparing it with time.Now's readings ignores wall-clock steps too.
func (t tick) time() time.Time { return clockBase.Add(time.Duration(t)) }

// Partition is one share-partition's state: the in-flight window and the
// records' states. It is not safe for concurrent use.
type Partition struct {
	cfg        Config
	start      Offset   // share-partition start offset: everything below is done
	slots      []slot   // slots[i] is offset start+i; len is the window
	members    []string // the members slots name; members[0] is "" (none)
	stateEpoch int32
}

// maxMembers is the size at which the member table is rebuilt from the
// members still holding locks, so that a long-lived share-partition read
// by ever new members does not keep every id it has seen.
const maxMembers = 256

// memberIndex returns member's index in p.members, adding it if new.
func (p *Partition) memberIndex(member string) int32 {
	if len(p.members) == 0 {
		p.members = append(p.members, "")
	}
	for i, m := range p.members {
		if m == member {
			return int32(i)
		}
	}
	if len(p.members) >= maxMembers {
		p.compactMembers()
	}
	p.members = append(p.members, member)
	return int32(len(p.members) - 1)
}

// findMember returns member's index, or -1 if no slot can name it.
func (p *Partition) findMember(member string) int32 {
	for i, m := range p.members {
		if i > 0 && m == member {
			return int32(i)
		}
	}
	return -1
}

// compactMembers rebuilds the member table from the acquired slots.
func (p *Partition) compactMembers() {
	old := p.members
	p.members = []string{""}
	remap := map[int32]int32{}
	for i := range p.slots {
		s := &p.slots[i]
		if s.member == 0 {
			continue
		}
		n, ok := remap[s.member]
		if !ok {
			p.members = append(p.members, old[s.member])
			n = int32(len(p.members) - 1)
			remap[s.member] = n
		}
		s.member = n
	}
}

func (p *Partition) memberName(i int32) string {
	if i <= 0 || int(i) >= len(p.members) {
		return ""
	}
	return p.members[i]
}

// NewPartition returns a share-partition starting at offset start with an
// empty window.
func NewPartition(cfg Config, start Offset) *Partition {
	if cfg.DeliveryLimit < 1 {
		cfg.DeliveryLimit = Defaults.DeliveryLimit
	}
	if cfg.MaxRecordLocks < 1 {
		cfg.MaxRecordLocks = Defaults.MaxRecordLocks
	}
	if cfg.LockDuration <= 0 {
		cfg.LockDuration = Defaults.LockDuration
	}
	return &Partition{cfg: cfg, start: start}
}

// Start is the share-partition start offset: the first offset not yet done.
func (p *Partition) Start() Offset { return p.start }

// End is one past the last offset ever acquired: the next new offset.
func (p *Partition) End() Offset { return p.start + Offset(len(p.slots)) }

// Config returns the partition's settings.
func (p *Partition) Config() Config { return p.cfg }

// SetConfig changes the settings for what happens next (a group config
// change); records already acquired keep their deadlines.
func (p *Partition) SetConfig(cfg Config) {
	start := p.start
	slots, members, epoch := p.slots, p.members, p.stateEpoch
	*p = *NewPartition(cfg, start)
	p.slots, p.members, p.stateEpoch = slots, members, epoch
}

// StateOf returns an offset's state and delivery count. Offsets below
// start are reported Acknowledged (done; which kind is forgotten), offsets
// at or past end Available with count 0.
func (p *Partition) StateOf(o Offset) (State, int16) {
	switch {
	case o < p.start:
		return Acknowledged, 0
	case o >= p.End():
		return Available, 0
	}
	s := p.slots[o-p.start]
	return s.state, s.count
}

// Owner returns the member holding an acquired offset ("" if none).
func (p *Partition) Owner(o Offset) string {
	if o < p.start || o >= p.End() {
		return ""
	}
	return p.memberName(p.slots[o-p.start].member)
}

// NextFetch is the lowest offset an acquisition could hand out: the first
// Available offset in the window, or end. A reader starts there.
func (p *Partition) NextFetch() Offset {
	for i := range p.slots {
		if p.slots[i].state == Available {
			return p.start + Offset(i)
		}
	}
	return p.End()
}

// CanAcquire reports whether Acquire could hand out anything given that the
// log holds records below limit: an Available offset in the window, or room
// to grow the window toward limit.
func (p *Partition) CanAcquire(limit Offset) bool {
	if p.NextFetch() < p.End() {
		return true
	}
	return p.End() < limit && len(p.slots) < p.cfg.MaxRecordLocks
}

// Acquire hands member up to max records below limit (one past the last
// offset the caller read from the log), lowest offsets first: Available
// offsets in the window (redeliveries), then new offsets that grow the
// window, at most to MaxRecordLocks. Each acquired offset's delivery count
// goes up by one and its lock expires at now + LockDuration.
func (p *Partition) Acquire(member string, limit Offset, max int, now time.Time) []Range {
	return p.AcquireSkipping(member, limit, max, now, nil)
}

// AcquireSkipping is Acquire where the offsets in skip (sorted, disjoint:
// control batches, aborted transactions; isolation.go) are never handed
// out: each one it meets is archived instead, with no delivery, and the
// window's start moves past those at its head.
func (p *Partition) AcquireSkipping(member string, limit Offset, max int, now time.Time, skip []Span) []Range {
	return p.AcquireBatches(member, limit, max, now, skip, nil)
}

// AcquireBatches is AcquireSkipping in Kafka's batch-optimized acquire
// mode (KIP-1206's ShareAcquireMode 0, the default) when batchEnd is set:
// batchEnd returns the last offset of the log batch holding an offset, and
// an acquisition that reaches max in the middle of a batch goes on to that
// batch's end (within limit and MaxRecordLocks), so that a member is not
// sent a batch of which it holds only a part — it would decode the whole
// batch and the next member most of it again. max is then a soft bound, as
// Kafka's MaxRecords is in that mode. A nil batchEnd is the record-limit
// mode: never more than max.
func (p *Partition) AcquireBatches(member string, limit Offset, max int, now time.Time, skip []Span, batchEnd func(Offset) Offset) []Range {
	var out []Range
	deadline, since, who := tickOf(now.Add(p.cfg.LockDuration)), tickOf(now), p.memberIndex(member)
	last, stop := Offset(-1), Offset(-1)
	take := func(i int) {
		s := &p.slots[i]
		s.state, s.member, s.deadline, s.since = Acquired, who, deadline, since
		s.count++
		o := p.start + Offset(i)
		if n := len(out); n > 0 && out[n-1].Last == o-1 && out[n-1].Count == s.count {
			out[n-1].Last = o
		} else {
			out = append(out, Range{First: o, Last: o, Count: s.count})
		}
		max--
		last = o
	}
	// more reports whether offset o may still be acquired: while max
	// lasts, then up to the end of the batch of the last one taken.
	more := func(o Offset) bool {
		if max > 0 {
			return true
		}
		if batchEnd == nil || last < 0 {
			return false
		}
		if stop < 0 {
			stop = batchEnd(last)
		}
		return o <= stop
	}
	cursor, skipped := 0, false
	for i := 0; i < len(p.slots) && p.start+Offset(i) < limit && more(p.start+Offset(i)); i++ {
		if p.slots[i].state != Available {
			continue
		}
		if inSpans(skip, &cursor, p.start+Offset(i)) {
			p.slots[i] = slot{state: Archived, count: p.slots[i].count}
			skipped = true
			continue
		}
		take(i)
	}
	for p.End() < limit && len(p.slots) < p.cfg.MaxRecordLocks && more(p.End()) {
		if inSpans(skip, &cursor, p.End()) {
			p.slots = append(p.slots, slot{state: Archived})
			skipped = true
			continue
		}
		p.slots = append(p.slots, slot{})
		take(len(p.slots) - 1)
	}
	if skipped {
		p.advance()
	}
	return out
}

// Acknowledge applies one acknowledgement of [first, last] by member. Every
// offset must be acquired by member (else ErrInvalidRecordState, and
// nothing changes). Accept and gap acknowledge, reject archives (a Dead
// record each), release makes the offsets available again — or archives
// them as Dead if they reached the delivery-count limit — and renew
// extends the locks. It returns the records given up on.
func (p *Partition) Acknowledge(member string, first, last Offset, kind AckType, now time.Time) ([]Dead, error) {
	if first > last || kind < AckGap || kind > AckRenew {
		return nil, fmt.Errorf("%w: [%d, %d] type %d", ErrInvalidRequest, first, last, kind)
	}
	if first < p.start || last >= p.End() {
		return nil, fmt.Errorf("%w: [%d, %d] outside the window [%d, %d)", ErrInvalidRecordState, first, last, p.start, p.End())
	}
	who := p.findMember(member)
	for o := first; o <= last; o++ {
		if s := p.slots[o-p.start]; s.state != Acquired || s.member != who {
			return nil, fmt.Errorf("%w: offset %d is %s", ErrInvalidRecordState, o, s.state)
		}
	}
	var dead []Dead
	for o := first; o <= last; o++ {
		s := &p.slots[o-p.start]
		switch kind {
		case AckAccept, AckGap:
			*s = slot{state: Acknowledged, count: s.count}
		case AckReject:
			dead = append(dead, Dead{Offset: o, Count: s.count, Reason: ReasonRejected, Member: member})
			*s = slot{state: Archived, count: s.count}
		case AckRelease:
			if d, ok := p.giveBackLocked(o, false); ok {
				dead = append(dead, d)
			}
		case AckRenew:
			s.deadline = tickOf(now.Add(p.cfg.LockDuration))
		}
	}
	p.advance()
	return dead, nil
}

// giveBackLocked ends offset o's acquisition without an acknowledgement
// (a release, an expiry, the member leaving): it is Available again unless
// it has been delivered DeliveryLimit times, when it is archived as Dead.
func (p *Partition) giveBackLocked(o Offset, expired bool) (Dead, bool) {
	s := &p.slots[o-p.start]
	if s.count >= p.cfg.DeliveryLimit {
		d := Dead{Offset: o, Count: s.count, Reason: ReasonDeliveryLimit, Member: p.memberName(s.member), Expired: expired}
		*s = slot{state: Archived, count: s.count}
		return d, true
	}
	*s = slot{state: Available, count: s.count}
	return Dead{}, false
}

// Expire ends every lock whose deadline is at or before now.
func (p *Partition) Expire(now time.Time) []Dead {
	t := tickOf(now)
	return p.releaseWhere(func(s *slot) bool { return s.deadline <= t }, true)
}

// ReleaseMember ends every lock member holds (it left the group, or closed
// its share session).
func (p *Partition) ReleaseMember(member string) []Dead {
	who := p.findMember(member)
	return p.releaseWhere(func(s *slot) bool { return s.member == who }, false)
}

func (p *Partition) releaseWhere(match func(*slot) bool, expired bool) []Dead {
	var dead []Dead
	for i := range p.slots {
		if s := &p.slots[i]; s.state == Acquired && match(s) {
			if d, ok := p.giveBackLocked(p.start+Offset(i), expired); ok {
				dead = append(dead, d)
			}
		}
	}
	p.advance()
	return dead
}

// ArchiveOverLimit archives every available record already delivered
// DeliveryLimit times — the limit was lowered since, or the state was
// loaded under another one — as a dead letter: it must not be delivered
// again.
func (p *Partition) ArchiveOverLimit() []Dead {
	var dead []Dead
	for i := range p.slots {
		if s := &p.slots[i]; s.state == Available && s.count >= p.cfg.DeliveryLimit {
			dead = append(dead, Dead{Offset: p.start + Offset(i), Count: s.count, Reason: ReasonDeliveryLimit})
			*s = slot{state: Archived, count: s.count}
		}
	}
	p.advance()
	return dead
}

// OverLimit reports whether ArchiveOverLimit has anything to do.
func (p *Partition) OverLimit() bool {
	for _, s := range p.slots {
		if s.state == Available && s.count >= p.cfg.DeliveryLimit {
			return true
		}
	}
	return false
}

// NextDeadline is the earliest lock deadline, and whether any lock is held.
func (p *Partition) NextDeadline() (time.Time, bool) {
	var t tick
	var ok bool
	for i := range p.slots {
		if s := p.slots[i]; s.state == Acquired && (!ok || s.deadline < t) {
			t, ok = s.deadline, true
		}
	}
	if !ok {
		return time.Time{}, false
	}
	return t.time(), true
}

// MoveStart moves the start offset forward to o, which the log no longer
// holds below (retention, DeleteRecords) or an operator reset to: offsets
// below it are forgotten, whatever their state. Moving to an offset at or
// below start does nothing. Moving backward is Reset's job.
func (p *Partition) MoveStart(o Offset) {
	if o <= p.start {
		return
	}
	if o >= p.End() {
		p.slots = p.slots[:0]
	} else {
		p.slots = append(p.slots[:0], p.slots[o-p.start:]...)
	}
	p.start = o
	p.advance()
}

// Reset forgets every record's state and starts again at o (the share
// group's offsets are altered or deleted); the state epoch goes up.
func (p *Partition) Reset(o Offset) {
	p.start, p.slots = o, p.slots[:0]
	p.stateEpoch++
}

// advance drops the done prefix of the window.
func (p *Partition) advance() {
	n := 0
	for n < len(p.slots) && p.slots[n].state.done() {
		n++
	}
	if n == 0 {
		return
	}
	p.slots = append(p.slots[:0], p.slots[n:]...)
	p.start += Offset(n)
}

// Stats are a share-partition's counts for describe and metrics.
type Stats struct {
	Start, End  Offset
	InFlight    int            // the window's length
	Available   int            // in the window, waiting for a (re)delivery
	Acquired    int            // locked by a member
	Done        int            // acknowledged or archived inside the window
	Deliveries  map[int16]int  // delivery count → offsets in the window with it
	OldestLock  time.Time      // the earliest acquisition deadline (zero if none)
	LockedSince time.Time      // when the longest-held acquisition began (zero if none)
	ByMember    map[string]int // acquired offsets per member
}

// Stats counts the window.
func (p *Partition) Stats() Stats {
	st := Stats{Start: p.start, End: p.End(), InFlight: len(p.slots), Deliveries: map[int16]int{}, ByMember: map[string]int{}}
	for _, s := range p.slots {
		switch {
		case s.state == Available:
			st.Available++
		case s.state == Acquired:
			st.Acquired++
			st.ByMember[p.memberName(s.member)]++
			if since := s.since.time().Round(0); st.LockedSince.IsZero() || since.Before(st.LockedSince) {
				st.LockedSince = since
			}
		default:
			st.Done++
		}
		if s.count > 0 {
			st.Deliveries[s.count]++
		}
	}
	st.OldestLock, _ = p.NextDeadline()
	st.OldestLock = st.OldestLock.Round(0) // a wall time, to show
	return st
}

// Clone returns an independent copy: the manager applies an operation to a
// clone and installs it only once its persisted form is durable.
func (p *Partition) Clone() *Partition { return p.CloneInto(nil) }

// CloneInto is Clone reusing into's memory (into may be nil): the manager
// keeps the partition a change replaced as the next change's buffer, so
// a change copies the window but allocates nothing.
func (p *Partition) CloneInto(into *Partition) *Partition {
	if into == nil {
		into = &Partition{}
	}
	slots, members := into.slots[:0], into.members[:0]
	*into = *p
	into.slots = append(slots, p.slots...)
	into.members = append(members, p.members...)
	return into
}
