package consumer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/assign"
)

// RecordType is the key type of a group record in __consumer_offsets. The
// numbers are Kafka's (0–2 are the classic group's offsets and metadata).
type RecordType int16

const (
	TypeGroupMetadata            RecordType = 3 // ConsumerGroupMetadata: group epoch
	TypeSubscriptionMetadata     RecordType = 4 // ConsumerGroupPartitionMetadata: subscribed topics' partition counts
	TypeMemberMetadata           RecordType = 5 // ConsumerGroupMemberMetadata: subscription, ids, timeouts
	TypeTargetAssignmentMetadata RecordType = 6 // ConsumerGroupTargetAssignmentMetadata: assignment epoch
	TypeTargetAssignment         RecordType = 7 // ConsumerGroupTargetAssignmentMember: one member's target
	TypeCurrentAssignment        RecordType = 8 // ConsumerGroupCurrentMemberAssignment: one member's epochs and partitions
)

// MemberMetadata is the value of a TypeMemberMetadata record.
type MemberMetadata struct {
	InstanceID, Rack, ClientID, ClientHost string
	Topics                                 []string
	Regex, Assignor                        string
	RebalanceTimeout                       time.Duration
	// Classic (value version 1) is a classic-protocol member's session
	// timeout and JoinGroup protocols; nil (version 0) for others.
	Classic *ClassicMember
}

// CurrentAssignment is the value of a TypeCurrentAssignment record.
type CurrentAssignment struct {
	Epoch, PreviousEpoch int32
	State                MemberState
	Assigned, Revoking   []assign.Partition
}

// Record is one group record. Type says which value field is meaningful:
// Epoch (3, 6), Topics (4), Meta (5), Partitions (7), Current (8). Member is
// set for 5, 7 and 8. A Tombstone deletes the key (a member's records when it
// leaves).
type Record struct {
	Type       RecordType
	Group      string
	Member     string
	Tombstone  bool
	Epoch      int32
	Topics     map[string]int32
	Meta       MemberMetadata
	Partitions []assign.Partition
	Current    CurrentAssignment
}

// ErrCorrupt is returned (wrapped) for a key or value that does not decode.
var ErrCorrupt = errors.New("consumer: corrupt group record")

// valueVersion is the version of every value schema here. Strand's schemas
// follow Kafka's fields but name topics rather than topic ids (the engine
// works on names), so they are Strand's own, versioned from 0.
const valueVersion int16 = 0

// classicMemberVersion is the MemberMetadata value version that carries a
// classic member's session timeout and protocols after the version-0
// fields.
const classicMemberVersion int16 = 1

func (t RecordType) hasMember() bool {
	return t == TypeMemberMetadata || t == TypeTargetAssignment || t == TypeCurrentAssignment
}

// Encode returns r's key and value; a tombstone's value is nil.
//
//	key:   type int16 | group string | member string (types 5, 7, 8)
//	value: version int16 | fields of the type, in declaration order
//
// A string is an int16 length and its bytes; a list an int32 count and its
// items; partitions are grouped by topic (name, then an int32 list); a
// duration is int32 milliseconds. Big-endian throughout, as Kafka's.
func (r Record) Encode() (key, value []byte) {
	var k writer
	k.i16(int16(r.Type))
	k.str(r.Group)
	if r.Type.hasMember() {
		k.str(r.Member)
	}
	if r.Tombstone {
		return k.b, nil
	}
	var v writer
	if r.Type == TypeMemberMetadata && r.Meta.Classic != nil {
		v.i16(classicMemberVersion)
	} else {
		v.i16(valueVersion)
	}
	switch r.Type {
	case TypeGroupMetadata, TypeTargetAssignmentMetadata:
		v.i32(r.Epoch)
	case TypeSubscriptionMetadata:
		names := slices.Sorted(maps.Keys(r.Topics))
		v.i32(int32(len(names)))
		for _, n := range names {
			v.str(n)
			v.i32(r.Topics[n])
		}
	case TypeMemberMetadata:
		m := r.Meta
		for _, s := range []string{m.InstanceID, m.Rack, m.ClientID, m.ClientHost} {
			v.str(s)
		}
		v.i32(int32(len(m.Topics)))
		for _, t := range m.Topics {
			v.str(t)
		}
		v.str(m.Regex)
		v.str(m.Assignor)
		v.i32(int32(m.RebalanceTimeout / time.Millisecond))
		if c := m.Classic; c != nil {
			v.i32(int32(c.SessionTimeout / time.Millisecond))
			v.i32(int32(len(c.Protocols)))
			for _, p := range c.Protocols {
				v.str(p.Name)
				v.bytes(p.Metadata)
			}
		}
	case TypeTargetAssignment:
		v.partitions(r.Partitions)
	case TypeCurrentAssignment:
		c := r.Current
		v.i32(c.Epoch)
		v.i32(c.PreviousEpoch)
		v.i8(int8(c.State))
		v.partitions(c.Assigned)
		v.partitions(c.Revoking)
	}
	return k.b, v.b
}

// Decode parses a key and value made by Encode; a nil value is a tombstone.
// It rejects unknown types and versions, bad lengths and trailing bytes with
// an error wrapping ErrCorrupt.
func Decode(key, value []byte) (Record, error) {
	k := reader{b: key}
	r := Record{Type: RecordType(k.i16())}
	if r.Type < TypeGroupMetadata || r.Type > TypeCurrentAssignment {
		return Record{}, fmt.Errorf("%w: key type %d", ErrCorrupt, r.Type)
	}
	r.Group = k.str()
	if r.Type.hasMember() {
		r.Member = k.str()
	}
	if err := k.done("key"); err != nil {
		return Record{}, err
	}
	if value == nil {
		r.Tombstone = true
		return r, nil
	}
	v := reader{b: value}
	ver := v.i16()
	if v.err == nil && ver != valueVersion && (r.Type != TypeMemberMetadata || ver != classicMemberVersion) {
		return Record{}, fmt.Errorf("%w: type %d value version %d", ErrCorrupt, r.Type, ver)
	}
	switch r.Type {
	case TypeGroupMetadata, TypeTargetAssignmentMetadata:
		r.Epoch = v.i32()
	case TypeSubscriptionMetadata:
		n := v.count(6)
		r.Topics = make(map[string]int32, n)
		names := make([]string, 0, n)
		for range n {
			name := v.str()
			names = append(names, name)
			r.Topics[name] = v.i32()
		}
		v.ascending(names)
	case TypeMemberMetadata:
		m := &r.Meta
		m.InstanceID, m.Rack, m.ClientID, m.ClientHost = v.str(), v.str(), v.str(), v.str()
		n := v.count(2)
		m.Topics = make([]string, 0, n)
		for range n {
			m.Topics = append(m.Topics, v.str())
		}
		v.ascending(m.Topics)
		m.Regex, m.Assignor = v.str(), v.str()
		m.RebalanceTimeout = time.Duration(v.i32()) * time.Millisecond
		if ver == classicMemberVersion {
			c := &ClassicMember{SessionTimeout: time.Duration(v.i32()) * time.Millisecond}
			n := v.count(6)
			c.Protocols = make([]ClassicProtocol, 0, n)
			for range n {
				c.Protocols = append(c.Protocols, ClassicProtocol{Name: v.str(), Metadata: v.bytes()})
			}
			m.Classic = c
		}
	case TypeTargetAssignment:
		r.Partitions = v.partitions()
	case TypeCurrentAssignment:
		c := &r.Current
		c.Epoch, c.PreviousEpoch = v.i32(), v.i32()
		c.State = MemberState(v.i8())
		if v.err == nil && (c.State < Stable || c.State > UnreleasedPartitions) {
			return Record{}, fmt.Errorf("%w: member state %d", ErrCorrupt, c.State)
		}
		c.Assigned, c.Revoking = v.partitions(), v.partitions()
	}
	if err := v.done("value"); err != nil {
		return Record{}, err
	}
	return r, nil
}

type writer struct{ b []byte }

func (w *writer) i8(x int8)   { w.b = append(w.b, byte(x)) }
func (w *writer) i16(x int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(x)) }
func (w *writer) i32(x int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(x)) }
func (w *writer) str(s string) {
	if len(s) > math.MaxInt16 {
		panic("consumer: string too long for a group record")
	}
	w.i16(int16(len(s)))
	w.b = append(w.b, s...)
}

// bytes writes b with an int32 length (JoinGroup metadata may pass an
// int16's reach).
func (w *writer) bytes(b []byte) {
	w.i32(int32(len(b)))
	w.b = append(w.b, b...)
}

// partitions writes ps (sorted) grouped by topic.
func (w *writer) partitions(ps []assign.Partition) {
	var topics []string
	for _, p := range ps {
		if len(topics) == 0 || topics[len(topics)-1] != p.Topic {
			topics = append(topics, p.Topic)
		}
	}
	w.i32(int32(len(topics)))
	i := 0
	for _, t := range topics {
		w.str(t)
		j := i
		for j < len(ps) && ps[j].Topic == t {
			j++
		}
		w.i32(int32(j - i))
		for ; i < j; i++ {
			w.i32(ps[i].Partition)
		}
	}
}

// reader decodes; the first error sticks and later reads return zeros.
type reader struct {
	b   []byte
	err error
}

func (r *reader) need(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = fmt.Errorf("%w: %d bytes needed, %d left", ErrCorrupt, n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) i8() int8 {
	if b := r.need(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) i16() int16 {
	if b := r.need(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) i32() int32 {
	if b := r.need(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) str() string {
	n := r.i16()
	if n < 0 && r.err == nil {
		r.err = fmt.Errorf("%w: string length %d", ErrCorrupt, n)
	}
	return string(r.need(int(max(n, 0))))
}

// bytes reads what writer.bytes wrote, as a copy.
func (r *reader) bytes() []byte {
	n := r.count(1)
	return append([]byte{}, r.need(n)...)
}

// count reads a list count, rejecting one that cannot fit in what is left
// when each item takes at least min bytes (so a corrupt count cannot make
// the decoder allocate).
func (r *reader) count(min int) int {
	n := r.i32()
	if r.err == nil && (n < 0 || int(n)*min > len(r.b)) {
		r.err = fmt.Errorf("%w: count %d with %d bytes left", ErrCorrupt, n, len(r.b))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// partitions reads a list written by writer.partitions, which is canonical:
// topics ascending, none empty, partitions ascending within each. Anything
// else is corrupt, so a decoded list is sorted and has no duplicates.
func (r *reader) partitions() []assign.Partition {
	out := []assign.Partition{}
	for range r.count(6) {
		t := r.str()
		n := r.count(4)
		if r.err == nil && (n == 0 || len(out) > 0 && out[len(out)-1].Topic >= t) {
			r.err = fmt.Errorf("%w: topic %q out of order or empty in a partition list", ErrCorrupt, t)
		}
		for i := range n {
			p := assign.Partition{Topic: t, Partition: r.i32()}
			if r.err == nil && i > 0 && out[len(out)-1].Partition >= p.Partition {
				r.err = fmt.Errorf("%w: partitions of %q out of order", ErrCorrupt, t)
			}
			out = append(out, p)
		}
	}
	return out
}

// ascending checks that names are strictly ascending, as Encode writes them.
func (r *reader) ascending(names []string) {
	for i := 1; r.err == nil && i < len(names); i++ {
		if names[i-1] >= names[i] {
			r.err = fmt.Errorf("%w: names out of order", ErrCorrupt)
		}
	}
}

func (r *reader) done(what string) error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes in %s", ErrCorrupt, len(r.b), what)
	}
	return r.err
}

// Replay rebuilds a group from its records in the order they were written
// (for one group; records of other groups are skipped). Deadlines are not
// persisted: members come back with none, and the caller either restores
// them (a fresh session from the load time) or fences them all; an
// unrevoked member's rebalance deadline must be restored likewise. Replay
// returns nil if no record created the group, and an error (wrapping
// ErrCorrupt) rather than a group in which a partition has two owners.
func Replay(id string, recs []Record) (*Group, error) {
	var g *Group
	for _, r := range recs {
		if r.Group != id {
			continue
		}
		if g == nil {
			g = NewGroup(id)
		}
		apply(g, r)
	}
	if g != nil {
		if _, err := g.owners(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	return g, nil
}

func apply(g *Group, r Record) {
	member := func() *Member {
		m, ok := g.Members[r.Member]
		if !ok {
			m = &Member{ID: r.Member}
			g.Members[r.Member] = m
		}
		return m
	}
	switch r.Type {
	case TypeGroupMetadata:
		g.Epoch = r.Epoch
	case TypeTargetAssignmentMetadata:
		g.AssignmentEpoch = r.Epoch
	case TypeSubscriptionMetadata:
		g.Subscribed = maps.Clone(r.Topics)
	case TypeMemberMetadata:
		if r.Tombstone {
			delete(g.Members, r.Member)
			return
		}
		m, md := member(), r.Meta
		m.InstanceID, m.Rack, m.ClientID, m.ClientHost = md.InstanceID, md.Rack, md.ClientID, md.ClientHost
		m.Topics, m.Regex, m.Assignor, m.RebalanceTimeout = nilIfEmpty(md.Topics), md.Regex, md.Assignor, md.RebalanceTimeout
		m.Classic = md.Classic
	case TypeTargetAssignment:
		if r.Tombstone {
			delete(g.Target, r.Member)
			return
		}
		g.Target[r.Member] = r.Partitions
	case TypeCurrentAssignment:
		if r.Tombstone {
			return // the member's metadata tombstone follows and removes it
		}
		m, c := member(), r.Current
		m.Epoch, m.PreviousEpoch, m.State = c.Epoch, c.PreviousEpoch, c.State
		m.Assigned, m.Revoking = c.Assigned, nilIfEmptyPartitions(c.Revoking)
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nilIfEmptyPartitions(ps []assign.Partition) []assign.Partition {
	if len(ps) == 0 {
		return nil
	}
	return ps
}
