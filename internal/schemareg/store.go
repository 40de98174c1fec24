package schemareg

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Store keeps the registry's records. The broker's Store will produce each
// record to the compacted _schemas topic and apply it once read back, so
// every node serves the same state; MemStore keeps them in memory.
type Store interface {
	// Write durably records r and applies it to the state View shows
	// before returning. It returns an error wrapping ErrConflict if r
	// landed at another offset than its Key.Seq (and so was not applied).
	Write(ctx context.Context, r Record) error
	// View calls fn with the current state; fn must not change it, and
	// may keep an *Entry (entries are replaced, never changed in place).
	View(fn func(*State))
}

// ErrConflict reports a write that lost a race with another node's: it was
// decided on a state that has since changed, so it was not applied. The
// Handler decides it again.
var ErrConflict = errors.New("schemareg: concurrent write to _schemas")

// Entry is one version of one subject.
type Entry struct {
	SchemaValue
}

// State is what the _schemas records add up to.
type State struct {
	subjects map[string]map[int]*Entry // subject → version → entry
	config   map[string]string         // "" is the global level
	mode     map[string]string         // "" is the global mode
	maxID    int
	pos      int64 // the _schemas offset after the last record read
}

// NewState returns an empty state, as a Store starts with.
func NewState() *State { return newState() }

func newState() *State {
	return &State{subjects: map[string]map[int]*Entry{}, config: map[string]string{}, mode: map[string]string{}}
}

// Position returns the _schemas offset after the last record the state
// has read: where a write decided on it must land.
func (s *State) Position() int64 { return s.pos }

// ApplyAt folds the record read at offset into the state, unless the
// record was planned for another offset (Key.Seq): then a concurrent write
// from another node got there first, the record is ignored, and ApplyAt
// reports false. Records are applied in offset order by every node, so
// every node ignores the same ones.
func (s *State) ApplyAt(r Record, offset int64) bool {
	s.pos = max(s.pos, offset+1)
	if r.Key.Seq != nil && *r.Key.Seq != offset {
		return false
	}
	s.Apply(r)
	return true
}

// Advance moves the position past offsets that held no registry record
// (compacted away, control batches).
func (s *State) Advance(next int64) { s.pos = max(s.pos, next) }

// Apply folds one record into the state.
func (s *State) Apply(r Record) {
	subj := ""
	if r.Key.Subject != nil {
		subj = *r.Key.Subject
	}
	switch r.Key.KeyType {
	case KeySchema:
		if r.Schema == nil {
			if vs := s.subjects[subj]; vs != nil {
				delete(vs, r.Key.Version)
				if len(vs) == 0 {
					delete(s.subjects, subj)
				}
			}
			return
		}
		vs := s.subjects[subj]
		if vs == nil {
			vs = map[int]*Entry{}
			s.subjects[subj] = vs
		}
		e := &Entry{SchemaValue: *r.Schema}
		vs[e.Version] = e
		s.maxID = max(s.maxID, e.ID)
	case KeyConfig:
		if r.Config == nil {
			delete(s.config, subj)
		} else {
			s.config[subj] = r.Config.CompatibilityLevel
		}
	case KeyMode:
		if r.Mode == nil {
			delete(s.mode, subj)
		} else {
			s.mode[subj] = r.Mode.Mode
		}
	case KeyDeleteSubject:
		if r.DeleteSubject != nil {
			// Entries are replaced, never changed in place: a reader may
			// still hold the old one outside View.
			vs := s.subjects[subj]
			for v, e := range vs {
				if v <= r.DeleteSubject.Version && !e.Deleted {
					c := *e
					c.Deleted = true
					vs[v] = &c
				}
			}
		}
	}
}

// Versions returns subject's live versions in order.
func (s *State) Versions(subject string) []SchemaValue {
	var out []SchemaValue
	for _, e := range s.versions(subject, false) {
		out = append(out, e.SchemaValue)
	}
	return out
}

// versions returns subj's versions in order, soft-deleted ones only if deleted.
func (s *State) versions(subj string, deleted bool) []*Entry {
	var out []*Entry
	for _, e := range s.subjects[subj] {
		if deleted || !e.Deleted {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// byID returns some entry carrying id, preferring a live one.
func (s *State) byID(id int) *Entry {
	var found *Entry
	for _, vs := range s.subjects {
		for _, e := range vs {
			if e.ID == id && (found == nil || found.Deleted) {
				found = e
			}
		}
	}
	return found
}

// MemStore is a Store in memory; safe for concurrent use.
type MemStore struct {
	mu struct {
		sync.RWMutex
		state *State
		log   []Record
	}
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	m := &MemStore{}
	m.mu.state = newState()
	return m
}

// Replay returns a MemStore holding what records add up to, as a node
// reading the _schemas topic from its start would.
func Replay(records []Record) *MemStore {
	m := NewMemStore()
	for _, r := range records {
		m.mu.state.ApplyAt(r, int64(len(m.mu.log)))
		m.mu.log = append(m.mu.log, r)
	}
	return m
}

// ReplayEncoded decodes and replays key/value pairs as read from _schemas.
func ReplayEncoded(pairs [][2][]byte) (*MemStore, error) {
	recs := make([]Record, 0, len(pairs))
	for i, p := range pairs {
		r, err := DecodeRecord(p[0], p[1])
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		recs = append(recs, r)
	}
	return Replay(recs), nil
}

// Write implements Store.
func (m *MemStore) Write(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	off := int64(len(m.mu.log))
	m.mu.log = append(m.mu.log, r)
	if !m.mu.state.ApplyAt(r, off) {
		return fmt.Errorf("%w: planned for offset %d, landed at %d", ErrConflict, *r.Key.Seq, off)
	}
	return nil
}

// View implements Store.
func (m *MemStore) View(fn func(*State)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fn(m.mu.state)
}

// Log returns every record written, in order (what _schemas would hold
// before compaction).
func (m *MemStore) Log() []Record {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]Record(nil), m.mu.log...)
}
