package coordlog

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// Leader is a partition of an internal topic that this node leads.
type Leader interface {
	comparable
	// WaitEpochCommitted waits until everything the previous leader
	// committed is readable here (the high watermark reached the start of
	// this node's epoch); false if leadership moved on first or stop
	// closed.
	WaitEpochCommitted(stop <-chan struct{}) bool
}

// Shards are the coordinators a node runs, one per partition of an
// internal topic it leads (group coordinators by __consumer_offsets
// partition, transaction coordinators by __transaction_state partition):
// a coordinator is loaded (its partition replayed) when the node gains
// leadership and its epoch is committed, and stopped when it loses it,
// so a coordinator moves with its partition's leadership, as Kafka's do.
//
// Lookups take no lock: the map is replaced whole on every change.
type Shards[P Leader, C comparable] struct {
	// What is the coordinators' name in logs ("group coordinator").
	What   string
	Logger *slog.Logger
	// Load replays partition k into a new coordinator; Stop unloads one.
	Load func(k int32, p P) (C, error)
	Stop func(C)

	mu sync.Mutex // serialises Sync, Set and StopAll
	m  atomic.Pointer[map[int32]shard[P, C]]
}

// shard is one partition's coordinator; loaded is the zero C while it
// replays the partition.
type shard[P Leader, C comparable] struct {
	p      P
	loaded C
	token  *int // tells a loading shard from its replacement
}

// Get returns partition k's coordinator: ok is false if this node runs
// none for it, and loaded the zero C while it loads.
func (s *Shards[P, C]) Get(k int32) (loaded C, ok bool) {
	sh, ok := s.all()[k]
	return sh.loaded, ok
}

// Loaded returns the loaded coordinators, by partition.
func (s *Shards[P, C]) Loaded() []C {
	all := s.all()
	var out []C
	var none C
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if c := all[k].loaded; c != none {
			out = append(out, c)
		}
	}
	return out
}

// Len is how many partitions have a coordinator (loaded or loading).
func (s *Shards[P, C]) Len() int { return len(s.all()) }

func (s *Shards[P, C]) all() map[int32]shard[P, C] {
	if m := s.m.Load(); m != nil {
		return *m
	}
	return nil
}

// setLocked installs sh for k (s.mu held); a nil sh removes k.
func (s *Shards[P, C]) setLocked(k int32, sh *shard[P, C]) {
	next := maps.Clone(s.all())
	if next == nil {
		next = map[int32]shard[P, C]{}
	}
	if sh == nil {
		delete(next, k)
	} else {
		next[k] = *sh
	}
	s.m.Store(&next)
}

// Set installs a coordinator loaded outside Sync (a single node loads its
// one partition's at open).
func (s *Shards[P, C]) Set(k int32, p P, c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(k, &shard[P, C]{p: p, loaded: c, token: new(int)})
}

// Sync runs a coordinator for each partition in leads and stops those of
// partitions no longer in it. A new coordinator loads in the background
// (started through goFn) once its partition's epoch is committed;
// requests for its partition answer COORDINATOR_LOAD_IN_PROGRESS
// meanwhile. closed reports whether the node is closing: nothing loads
// then.
func (s *Shards[P, C]) Sync(leads map[int32]P, closed func() bool, stop <-chan struct{}, goFn func(func())) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if closed() { // the node has unloaded every coordinator: load none
		return
	}
	var none C
	for k, sh := range s.all() {
		if p, ok := leads[k]; !ok || p != sh.p {
			s.setLocked(k, nil)
			if sh.loaded != none {
				s.Stop(sh.loaded)
			}
			s.Logger.Info("broker: "+s.What+" unloaded: this node no longer leads its partition", "partition", k)
		}
	}
	for k, p := range leads {
		if _, ok := s.all()[k]; ok {
			continue
		}
		token := new(int)
		s.setLocked(k, &shard[P, C]{p: p, token: token})
		goFn(func() { s.load(k, p, token, closed, stop) })
	}
}

// load loads partition k's coordinator, unless leadership moved on or
// the shard was replaced meanwhile.
func (s *Shards[P, C]) load(k int32, p P, token *int, closed func() bool, stop <-chan struct{}) {
	if !p.WaitEpochCommitted(stop) {
		return // leadership moved on before it could load: the next sync decides
	}
	c, err := s.Load(k, p)
	if err != nil {
		s.Logger.Error("broker: cannot load a "+s.What, "partition", k, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh, ok := s.all()[k]; !ok || sh.token != token || closed() { // unloaded meanwhile
		s.Stop(c)
		return
	}
	s.setLocked(k, &shard[P, C]{p: p, loaded: c, token: token})
	s.Logger.Info("broker: "+s.What+" loaded", "partition", k)
}

// StopAll unloads every coordinator (the node closes).
func (s *Shards[P, C]) StopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var none C
	for k, sh := range s.all() {
		s.setLocked(k, nil)
		if sh.loaded != none {
			s.Stop(sh.loaded)
		}
	}
}
