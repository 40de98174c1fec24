package share

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/strandmq/strand/internal/record"
)

// GroupConfig is a share group's settings (Kafka's group configs).
type GroupConfig struct {
	Partition       Config
	AutoOffsetReset string // share.auto.offset.reset: "latest" (default) or "earliest"
	DeadLetterTopic string // errors.deadletterqueue.topic.name (KIP-1191); "" archives without a copy
	ReadCommitted   bool   // share.isolation.level=read_committed (isolation.go)
}

// Manager is the share-partition manager of one node: the share-partitions
// of the partitions it leads, their persistence in __share_group_state and
// their dead letters. Every method is safe for concurrent use.
//
// Each operation that changes a share-partition is applied to a clone; the
// dead letters it produces are appended to the dead-letter topic, then the
// clone's snapshot to __share_group_state, and only then is the clone
// installed and the client answered. A failed write leaves the state as it
// was (the acknowledgement fails and the client may retry). A crash between
// the two writes leaves the record unarchived: it is delivered again and,
// if given up on again, dead-lettered twice — a duplicate in the DLQ,
// never a loss.
type Manager struct {
	host   Host
	logger *slog.Logger
	now    func() time.Time
	config func(group string) GroupConfig
	store  StateStore // a cluster's share coordinators; nil: host's AppendState (one node)

	mu struct {
		sync.Mutex
		parts  map[SPKey]*entry
		loaded map[SPKey]Snapshot // replayed state not yet opened
		wake   chan struct{}      // closed and replaced when records become available
	}
	stop   chan struct{}
	done   chan struct{}
	counts counters
}

type entry struct {
	mu    sync.Mutex
	key   SPKey
	tp    TopicPartition
	p     *Partition
	spare *Partition // the partition the last change replaced: the next change's buffer
	epoch uint16     // snapshot epoch: writes so far
	// leaderEpoch is the data partition's leader epoch the state was
	// loaded at (with a StateStore): a different one reloads it.
	leaderEpoch int32
	// admitted are the members whose acquisitions from this window
	// checked the coordinator's state epoch (with a StateStore; remote.go).
	admitted map[string]struct{}
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Host   Host
	Logger *slog.Logger
	Now    func() time.Time
	// Config returns a group's settings (the Coordinator's GroupConfig).
	Config func(group string) GroupConfig
	// ExpiryInterval is how often locks are checked for expiry (default
	// 100 ms): a lock ends at most this late.
	ExpiryInterval time.Duration
	// Store, on a cluster, reaches the share coordinators that persist
	// each share-partition's state (remote.go); the Host must then also
	// be a LeaderEpochs. Nil: one node, whose Host persists the state and
	// replays it at start.
	Store StateStore
}

// NewManager replays __share_group_state and starts the lock-expiry loop.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Config == nil {
		cfg.Config = func(string) GroupConfig { return GroupConfig{Partition: Defaults} }
	}
	if cfg.ExpiryInterval <= 0 {
		cfg.ExpiryInterval = 100 * time.Millisecond
	}
	m := &Manager{host: cfg.Host, logger: cfg.Logger, now: cfg.Now, config: cfg.Config, store: cfg.Store, stop: make(chan struct{}), done: make(chan struct{})}
	m.mu.parts = map[SPKey]*entry{}
	m.mu.wake = make(chan struct{})
	loaded, err := replay(cfg.Host, cfg.Logger)
	if err != nil {
		return nil, err
	}
	m.mu.loaded = loaded
	go m.expireLoop(cfg.ExpiryInterval)
	return m, nil
}

// replay folds __share_group_state into the latest state of each
// share-partition: a snapshot replaces, an update merges, a tombstone
// deletes. A record that does not decode is logged and skipped.
func replay(h interface {
	ReplayState(fn func(key, value []byte)) error
}, logger *slog.Logger) (map[SPKey]Snapshot, error) {
	out := map[SPKey]Snapshot{}
	err := h.ReplayState(func(kb, vb []byte) {
		k, err := DecodeKey(kb)
		if err != nil {
			logger.Warn("share: skipping a __share_group_state record", "err", err)
			return
		}
		sp := k.SP()
		switch {
		case k.Type == KeyGroupConfig:
			// the Coordinator's
		case vb == nil:
			delete(out, sp)
		case k.Type == KeySnapshot:
			s, _, err := DecodeSnapshot(vb)
			if err != nil {
				logger.Warn("share: skipping a __share_group_state snapshot", "group", k.Group, "err", err)
				return
			}
			out[sp] = s
		default:
			u, _, err := DecodeUpdate(vb)
			if err != nil {
				logger.Warn("share: skipping a __share_group_state update", "group", k.Group, "err", err)
				return
			}
			if s, ok := out[sp]; ok {
				out[sp] = s.Apply(u)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("share: replay %s: %w", StateTopic, err)
	}
	return out, nil
}

// Close stops the expiry loop.
func (m *Manager) Close() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

// open returns the share-partition of group on tp, creating it on first
// use: from its replayed state, else at the log's end (or start, with
// share.auto.offset.reset=earliest), persisted at once so that a restart
// does not start it again at a later end (Kafka's InitializeShareGroupState).
func (m *Manager) open(ctx context.Context, group string, tp TopicPartition) (*entry, error) {
	if m.store != nil {
		return m.openRemote(ctx, group, tp)
	}
	key := SPKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	m.mu.Lock()
	e, ok := m.mu.parts[key]
	if !ok {
		e = &entry{key: key, tp: tp}
		m.mu.parts[key] = e
	}
	snap, replayed := m.mu.loaded[key]
	delete(m.mu.loaded, key)
	m.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.p != nil {
		return e, nil
	}
	cfg := m.config(group)
	if replayed {
		e.p = Restore(cfg.Partition, snap)
		return e, nil
	}
	logStart, hw, err := m.host.Bounds(tp)
	if err != nil {
		return nil, err
	}
	start := hw
	if cfg.AutoOffsetReset == "earliest" {
		start = logStart
	}
	p := NewPartition(cfg.Partition, start)
	if err := m.persistLocked(ctx, e, p); err != nil {
		return nil, err
	}
	e.p = p
	return e, nil
}

// persistLocked writes p as e's snapshot.
func (m *Manager) persistLocked(ctx context.Context, e *entry, p *Partition) error {
	if m.store != nil {
		return m.persistRemoteLocked(ctx, e, p)
	}
	e.epoch++
	k := EncodeKey(Key{Type: KeySnapshot, Group: e.key.Group, TopicID: e.key.TopicID, Partition: e.key.Partition})
	v := EncodeSnapshot(p.Snapshot(), e.epoch)
	if err := m.host.AppendState(ctx, []StateRecord{{Key: k, Value: v}}); err != nil {
		return fmt.Errorf("share: persist %s %s-%d: %w", e.key.Group, e.tp.Topic, e.tp.Partition, err)
	}
	return nil
}

// changeLocked applies op to a clone of e's partition, dead-letters what it
// gives up on, persists the clone and installs it.
func (m *Manager) changeLocked(ctx context.Context, e *entry, op func(p *Partition) ([]Dead, error)) error {
	c := e.p.CloneInto(e.spare)
	e.spare = nil
	c.SetConfig(m.config(e.key.Group).Partition)
	dead, err := op(c)
	if err != nil || reflectSame(e.p, c) {
		e.spare = c
		return err
	}
	if len(dead) > 0 {
		if err := m.deadLetter(ctx, e, dead); err != nil {
			e.spare = c
			return err
		}
	}
	if err := m.persistLocked(ctx, e, c); err != nil {
		e.spare = c
		return err
	}
	old := e.p
	e.p, e.spare = c, old
	// Wake the fetches waiting for records: some are available again,
	// or the window was full (group.share.partition.max.record.locks)
	// and its start moved, making room for new ones. Only then: every
	// waiting fetch of the node wakes.
	if c.NextFetch() < c.End() || (len(old.slots) >= old.cfg.MaxRecordLocks && len(c.slots) < c.cfg.MaxRecordLocks) {
		m.wakeAll()
	}
	return nil
}

// reflectSame reports whether two partitions hold the same persisted
// state, so an operation that changed nothing durable writes nothing.
func reflectSame(a, b *Partition) bool {
	if a.start != b.start || a.stateEpoch != b.stateEpoch || len(a.slots) != len(b.slots) {
		return false
	}
	for i := range a.slots {
		if a.slots[i] != b.slots[i] {
			return false
		}
	}
	return true
}

// deadLetter copies the dead records to the group's dead-letter topic.
// Records the log no longer holds (deleted by retention meanwhile) are
// logged and skipped: there is nothing left to copy.
func (m *Manager) deadLetter(ctx context.Context, e *entry, dead []Dead) error {
	topic := m.config(e.key.Group).DeadLetterTopic
	if topic == "" {
		return nil
	}
	want := map[Offset]Dead{}
	for _, d := range dead {
		want[d.Offset] = d
	}
	var out []record.Record
	for _, o := range slices.Sorted(maps.Keys(want)) {
		if _, pending := want[o]; !pending {
			continue // found in an earlier read
		}
		rd, err := m.host.ReadLog(nil, e.tp, o, 1<<20)
		if err != nil {
			return fmt.Errorf("share: read %s-%d@%d for its dead letter: %w", e.tp.Topic, e.tp.Partition, o, err)
		}
		s := record.Batches(rd.Batches)
		for s.Next() {
			b, err := record.Decode(s.Batch())
			if err != nil {
				return fmt.Errorf("share: decode %s-%d for its dead letters: %w", e.tp.Topic, e.tp.Partition, err)
			}
			for _, r := range b.Records {
				if d, ok := want[Offset(r.Offset)]; ok {
					out = append(out, DeadLetter(r, d, e.key.Group, e.tp))
					delete(want, d.Offset)
				}
			}
		}
		if _, still := want[o]; still {
			m.logger.Warn("share: a dead record is no longer in the log; archived without a dead letter", "group", e.key.Group, "topic", e.tp.Topic, "partition", e.tp.Partition, "offset", o)
			delete(want, o)
		}
	}
	if len(out) == 0 {
		return nil
	}
	if err := m.host.AppendDeadLetters(ctx, topic, e.tp, out); err != nil {
		return fmt.Errorf("share: dead letters of %s to %s: %w", e.key.Group, topic, err)
	}
	return nil
}

func (m *Manager) wakeAll() {
	m.mu.Lock()
	close(m.mu.wake)
	m.mu.wake = make(chan struct{})
	m.mu.Unlock()
}

func (m *Manager) waiter() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.wake
}

// Ack is one acknowledgement batch: offsets [First, Last] with one type
// each (Types has one entry for the whole range, or one per offset).
type Ack struct {
	First, Last Offset
	Types       []AckType
}

// Acknowledge applies a member's acknowledgements of one share-partition,
// all or nothing: one that is invalid fails them all (Kafka answers the
// partition with one error code too).
func (m *Manager) Acknowledge(ctx context.Context, group, member string, tp TopicPartition, acks []Ack) error {
	e, err := m.open(ctx, group, tp)
	if err != nil {
		return err
	}
	now := m.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	byKind := map[AckType]int64{}
	var given int
	err = m.changeLocked(ctx, e, func(p *Partition) ([]Dead, error) {
		var dead []Dead
		for _, a := range acks {
			if a.First > a.Last || (len(a.Types) != 1 && len(a.Types) != int(a.Last-a.First+1)) {
				return nil, fmt.Errorf("%w: [%d, %d] with %d types", ErrInvalidRequest, a.First, a.Last, len(a.Types))
			}
			for o := a.First; o <= a.Last; {
				kind, end := a.Types[0], a.Last
				if len(a.Types) > 1 {
					kind = a.Types[o-a.First]
					end = o
					for end < a.Last && a.Types[end+1-a.First] == kind {
						end++
					}
				}
				d, err := p.Acknowledge(member, o, end, kind, now)
				if err != nil {
					return nil, err
				}
				dead = append(dead, d...)
				byKind[kind] += int64(end - o + 1)
				o = end + 1
			}
		}
		given = len(dead)
		return dead, nil
	})
	if err == nil {
		m.counts.add(group, func(c *Counters) {
			for k, n := range byKind {
				c.Acknowledged[k] += n
			}
			c.DeadLettered += int64(given)
		})
	}
	return err
}

// Grant is one partition's share of a fetch.
type Grant struct {
	TP      TopicPartition
	Batches []byte // the batches holding the acquired records
	Ranges  []Range
	Err     error
	buf     []byte // the pooled buffer Batches may alias (Release)
}

// Release gives the buffer the grant's batches were read into back for
// another fetch: call it once Batches are no longer used (written to the
// member), and never read Batches after. A grant never released only costs
// the allocation it would have saved.
func (g *Grant) Release() {
	if g.buf != nil {
		putReadBuf(g.buf)
		g.buf, g.Batches = nil, nil
	}
}

// FetchSpec is what one member asks of a set of partitions.
type FetchSpec struct {
	Group, Member string
	Partitions    []TopicPartition
	MaxRecords    int
	MaxBytes      int
	MaxWait       time.Duration
	// RecordLimit is KIP-1206's record-limit acquire mode: never more
	// than MaxRecords. Else (batch-optimized, the default) an acquisition
	// takes whole log batches and may pass MaxRecords to the end of one.
	RecordLimit bool
}

// Fetch acquires records for a member across its partitions, waiting up
// to MaxWait for some to become available.
func (m *Manager) Fetch(ctx context.Context, spec FetchSpec) []Grant {
	deadline := time.Now().Add(spec.MaxWait) // wall time: the wait is real whatever clock locks use
	if spec.MaxRecords <= 0 {
		spec.MaxRecords = 500
	}
	if spec.MaxBytes <= 0 {
		spec.MaxBytes = 1 << 20
	}
	for {
		wake := m.waiter()
		appended, unwatch := m.watchLogs(spec.Partitions) // before the read: an append after it wakes the wait
		out, n := m.fetchOnce(ctx, spec)
		if n > 0 || !time.Now().Before(deadline) {
			unwatch()
			return out
		}
		// New records wake the wait where the host reports appends
		// (watch.go); else, and for a last stable offset that moves
		// without an append, the logs are polled at a short interval.
		// A release or an expiry wakes it too.
		wait := min(time.Until(deadline), 20*time.Millisecond)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-m.stop:
		case <-wake:
		case <-appended:
		case <-t.C:
		}
		t.Stop()
		unwatch()
		if ctx.Err() != nil || isClosed(m.stop) {
			return out
		}
	}
}

func (m *Manager) fetchOnce(ctx context.Context, spec FetchSpec) ([]Grant, int) {
	out := make([]Grant, 0, len(spec.Partitions))
	left, bytes, total := spec.MaxRecords, spec.MaxBytes, 0
	for _, tp := range spec.Partitions {
		a := Grant{TP: tp}
		if left > 0 && bytes > 0 {
			a.Batches, a.Ranges, a.buf, a.Err = m.acquire(ctx, spec.Group, spec.Member, tp, left, bytes, spec.RecordLimit)
			for _, r := range a.Ranges {
				n := int(r.Last - r.First + 1)
				left -= n
				total += n
			}
			bytes -= len(a.Batches)
		}
		out = append(out, a)
	}
	return out, total
}

// acquire acquires up to max records of tp for member and returns the
// batches holding them, their ranges, and the pooled buffer the batches
// may alias (Grant.Release).
func (m *Manager) acquire(ctx context.Context, group, member string, tp TopicPartition, max, maxBytes int, recordLimit bool) ([]byte, []Range, []byte, error) {
	e, err := m.open(ctx, group, tp)
	if err != nil {
		return nil, nil, nil, err
	}
	e.mu.Lock()
	if m.store != nil && !e.isAdmitted(member) {
		e.mu.Unlock() // a coordinator round trip, once per member (remote.go)
		if e, err = m.admitRemote(ctx, e, member); err != nil {
			return nil, nil, nil, err
		}
		e.mu.Lock()
	}
	defer e.mu.Unlock()
	logStart, hw, err := m.host.Bounds(tp)
	if err != nil {
		return nil, nil, nil, err
	}
	if logStart > e.p.Start() {
		// Retention or DeleteRecords removed records the group had not
		// finished: they are gone for every reader.
		if err := m.changeLocked(ctx, e, func(p *Partition) ([]Dead, error) { p.MoveStart(logStart); return nil, nil }); err != nil {
			return nil, nil, nil, err
		}
	}
	if e.p.SetConfig(m.config(group).Partition); e.p.OverLimit() {
		var given int
		if err := m.changeLocked(ctx, e, func(p *Partition) ([]Dead, error) { d := p.ArchiveOverLimit(); given = len(d); return d, nil }); err != nil {
			return nil, nil, nil, err
		}
		m.counts.add(group, func(c *Counters) { c.DeadLettered += int64(given) })
	}
	if !e.p.CanAcquire(hw) {
		return nil, nil, nil, nil
	}
	rd, limit, skip, buf, err := m.readForAcquire(tp, e.p.NextFetch(), max, maxBytes, hw, m.config(group).ReadCommitted)
	if err != nil {
		return nil, nil, nil, err
	}
	// Acquisition is not persisted (Kafka does not either): a restart
	// forgets the lock and this delivery's count; the record is simply
	// available again.
	var ends func(Offset) Offset
	if !recordLimit {
		ends = batchEnds(rd.Batches)
	}
	ranges := e.p.AcquireBatches(member, limit, max, m.now(), skip, ends)
	if len(ranges) == 0 {
		putReadBuf(buf)
		return nil, nil, nil, nil
	}
	m.counts.add(group, func(c *Counters) {
		for _, r := range ranges {
			n := int64(r.Last - r.First + 1)
			c.Acquired += n
			if r.Count > 1 {
				c.Redelivered += n
			}
		}
	})
	return keepBatches(rd.Batches, ranges), ranges, buf, nil
}

// batchEnds returns a function from an offset to the last offset of the
// batch of b holding it (the offset itself if none does).
func batchEnds(b []byte) func(Offset) Offset {
	var lasts []Offset
	for s := record.Batches(b); s.Next(); {
		h := s.Header()
		lasts = append(lasts, Offset(h.LastOffset()))
	}
	return func(o Offset) Offset {
		if i, _ := slices.BinarySearch(lasts, o); i < len(lasts) {
			return lasts[i]
		}
		return o
	}
}

// keepBatches returns the batches of b that hold an acquired offset: the
// others are not this member's to see. When the kept batches are one run
// of b, as they are unless a marker or another member's records sit among
// them, it returns that run of b itself rather than a copy.
func keepBatches(b []byte, ranges []Range) []byte {
	type run struct{ from, to int }
	var runs []run
	pos := 0
	s := record.Batches(b)
	for s.Next() {
		h, n := s.Header(), len(s.Batch())
		first, last := Offset(h.BaseOffset), Offset(h.LastOffset())
		for _, r := range ranges {
			if r.First <= last && r.Last >= first {
				if k := len(runs); k > 0 && runs[k-1].to == pos {
					runs[k-1].to = pos + n
				} else {
					runs = append(runs, run{pos, pos + n})
				}
				break
			}
		}
		pos += n
	}
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return b[runs[0].from:runs[0].to:runs[0].to]
	}
	var out []byte
	for _, r := range runs {
		out = append(out, b[r.from:r.to]...)
	}
	return out
}

// ReleaseMember ends every lock member holds in group (it left, was
// fenced, or closed its share session on this node).
func (m *Manager) ReleaseMember(ctx context.Context, group, member string) {
	for _, e := range m.entries(group) {
		e.mu.Lock()
		delete(e.admitted, member) // a member that comes back is checked again (remote.go)
		if e.p != nil {
			var given int
			err := m.changeLocked(ctx, e, func(p *Partition) ([]Dead, error) { d := p.ReleaseMember(member); given = len(d); return d, nil })
			if err != nil {
				m.logger.Warn("share: releasing a member's records", "group", group, "member", member, "err", err)
			} else if given > 0 {
				m.counts.add(group, func(c *Counters) { c.DeadLettered += int64(given) })
			}
		}
		e.mu.Unlock()
	}
}

// entries lists the opened share-partitions, of one group ("" for all).
func (m *Manager) entries(group string) []*entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*entry
	for k, e := range m.mu.parts {
		if group == "" || k.Group == group {
			out = append(out, e)
		}
	}
	return out
}

func (m *Manager) expireLoop(every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.ExpireLocks(context.Background())
		}
	}
}

// ExpireLocks ends every lock past its deadline (the loop calls it; tests
// may too).
func (m *Manager) ExpireLocks(ctx context.Context) {
	now := m.now()
	for _, e := range m.entries("") {
		if m.dropStale(e) {
			continue
		}
		e.mu.Lock()
		if e.p != nil {
			if t, ok := e.p.NextDeadline(); ok && !t.After(now) {
				var expired, given int
				err := m.changeLocked(ctx, e, func(p *Partition) ([]Dead, error) {
					before := p.Stats().Acquired
					dead := p.Expire(now)
					expired, given = before-p.Stats().Acquired, len(dead)
					return dead, nil
				})
				if err != nil {
					m.logger.Warn("share: expiring locks", "group", e.key.Group, "topic", e.tp.Topic, "partition", e.tp.Partition, "err", err)
				} else {
					m.counts.add(e.key.Group, func(c *Counters) { c.LockExpired += int64(expired); c.DeadLettered += int64(given) })
				}
			}
		}
		e.mu.Unlock()
	}
}

// PartitionStats is one share-partition's counts, for describe.
type PartitionStats struct {
	Group string
	TP    TopicPartition
	Stats
}

// Stats returns the counts of group's share-partitions on this node.
func (m *Manager) Stats(group string) []PartitionStats {
	var out []PartitionStats
	for _, e := range m.entries(group) {
		e.mu.Lock()
		if e.p != nil {
			out = append(out, PartitionStats{Group: e.key.Group, TP: e.tp, Stats: e.p.Stats()})
		}
		e.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b PartitionStats) int {
		if a.TP.Topic != b.TP.Topic {
			if a.TP.Topic < b.TP.Topic {
				return -1
			}
			return 1
		}
		return int(a.TP.Partition - b.TP.Partition)
	})
	return out
}

// StartOffset returns a share-partition's start offset as persisted or in
// memory, and whether the group has state there.
func (m *Manager) StartOffset(group string, tp TopicPartition) (Offset, bool) {
	key := SPKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	m.mu.Lock()
	e, ok := m.mu.parts[key]
	snap, replayed := m.mu.loaded[key]
	m.mu.Unlock()
	if ok {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.p != nil {
			return e.p.Start(), true
		}
	}
	return snap.Start, replayed
}

// Partitions lists the share-partitions group has state for on this node
// (opened or replayed).
func (m *Manager) Partitions(group string) []SPKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []SPKey
	for k := range m.mu.parts {
		if k.Group == group {
			out = append(out, k)
		}
	}
	for k := range m.mu.loaded {
		if k.Group == group {
			out = append(out, k)
		}
	}
	return out
}

// Summary is a share-partition's start offset and how many offsets at or
// past it are done (acknowledged or archived inside the window).
type Summary struct {
	Start Offset
	Done  int
}

// Summary returns a share-partition's summary, and whether the group has
// state there.
func (m *Manager) Summary(group string, tp TopicPartition) (Summary, bool) {
	key := SPKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	m.mu.Lock()
	e, ok := m.mu.parts[key]
	snap, replayed := m.mu.loaded[key]
	m.mu.Unlock()
	if ok {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.p != nil {
			return Summary{Start: e.p.Start(), Done: e.p.Stats().Done}, true
		}
	}
	if !replayed {
		return Summary{}, false
	}
	return Summary{Start: snap.Start, Done: Restore(Config{MaxRecordLocks: 1 << 30}, snap).Stats().Done}, true
}

// Reset moves a share-partition to start at o, forgetting every record's
// state (AlterShareGroupOffsets; the group has no members), persisted.
func (m *Manager) Reset(ctx context.Context, group string, tp TopicPartition, o Offset) error {
	e, err := m.open(ctx, group, tp)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return m.changeLocked(ctx, e, func(p *Partition) ([]Dead, error) { p.Reset(o); return nil, nil })
}

// Delete forgets a share-partition's state (DeleteShareGroupOffsets; the
// group has no members): a tombstone in __share_group_state. The next use
// starts it again by share.auto.offset.reset.
func (m *Manager) Delete(ctx context.Context, group string, tp TopicPartition) error {
	key := SPKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	m.mu.Lock()
	e := m.mu.parts[key]
	m.mu.Unlock()
	if e != nil {
		e.mu.Lock()
		defer e.mu.Unlock()
	}
	var err error
	if m.store != nil {
		err = m.store.Remove(ctx, key)
	} else {
		k := EncodeKey(Key{Type: KeySnapshot, Group: group, TopicID: tp.TopicID, Partition: tp.Partition})
		err = m.host.AppendState(ctx, []StateRecord{{Key: k}})
	}
	if err != nil {
		return fmt.Errorf("share: delete %s %s-%d: %w", group, tp.Topic, tp.Partition, err)
	}
	m.mu.Lock()
	delete(m.mu.parts, key)
	delete(m.mu.loaded, key)
	m.mu.Unlock()
	return nil
}
