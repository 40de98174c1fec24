package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/strandmq/strand/internal/coordlog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Store persists the coordinator's durable state: committed offsets and group
// metadata, as records of the compacted internal topic __consumer_offsets.
// The node implements it over that topic (a coordlog.Store); MemStore implements it in memory.
//
// Keys and values use Kafka's own __consumer_offsets schemas, so the topic's
// bytes are what a Kafka broker would write:
//
//	offset commit   key   = OffsetCommitKey   v1 {version int16, group, topic string, partition int32}
//	                value = OffsetCommitValue v3 {version int16, offset int64, leader_epoch int32,
//	                                              metadata string, commit_timestamp int64}
//	group metadata  key   = GroupMetadataKey  v2 {version int16, group string}
//	                value = GroupMetadataValue v3 {version, protocol_type, generation, protocol,
//	                                              leader, current_state_timestamp, members[
//	                                              member_id, instance_id, client_id, client_host,
//	                                              rebalance_timeout, session_timeout,
//	                                              subscription, assignment]}
//	tombstone       value = nil (the offset, or the whole group, is deleted)
//
// kmsg is used here only as a serialization library for that on-disk schema;
// the wire protocol itself still never reaches below internal/kafka. The
// alternative, hand-writing the encoders, would duplicate code that kmsg
// already generates from Kafka's own JSON schemas.
type Store interface {
	// Append durably writes recs, in order, and returns when they are written.
	Append(ctx context.Context, recs []StoreRecord) error
	// Replay calls fn for every record in log order. The coordinator calls it
	// once, in New, before serving any request.
	Replay(fn func(StoreRecord) error) error
}

// StoreRecord is one __consumer_offsets record. A nil Value is a tombstone.
// Txn is set on a replayed record of a transaction, or a marker (then Key
// and Value are unset). It is package coordlog's record: the node's Store
// over the topic is a coordlog.Store.
type StoreRecord = coordlog.Record

// ErrCorruptRecord is returned (wrapped) by New when a replayed record cannot
// be decoded.
var ErrCorruptRecord = errors.New("group: corrupt __consumer_offsets record")

// Key versions of the __consumer_offsets schemas: 0 and 1 are offset
// commits, 2 is group metadata (Kafka's GroupMetadataManager).
const (
	offsetKeyVersion   int16 = 1
	groupKeyVersion    int16 = 2
	offsetValueVersion int16 = 3
	groupValueVersion  int16 = 3
)

func offsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	return k.AppendTo(nil)
}

func offsetValue(o OffsetAndMetadata) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset = o.Offset
	v.LeaderEpoch = o.LeaderEpoch
	v.Metadata = o.Metadata
	v.CommitTimestamp = o.CommitTime.UnixMilli()
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// decodedRecord is one replayed record, classified.
type decodedRecord struct {
	group  string
	offset *offsetRecord // set for an offset commit key
	meta   *kmsg.GroupMetadataValue
	delete bool // tombstone
}

type offsetRecord struct {
	tp    TopicPartition
	value OffsetAndMetadata
}

func decodeRecord(r StoreRecord) (decodedRecord, error) {
	if len(r.Key) < 2 {
		return decodedRecord{}, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(r.Key))
	}
	var d decodedRecord
	switch version := int16(binary.BigEndian.Uint16(r.Key)); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return d, fmt.Errorf("%w: offset key: %v", ErrCorruptRecord, err)
		}
		d.group = k.Group
		d.offset = &offsetRecord{tp: TopicPartition{Topic: k.Topic, Partition: k.Partition}}
		if r.Value == nil {
			d.delete = true
			return d, nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			return d, fmt.Errorf("%w: offset value for %s: %v", ErrCorruptRecord, k.Group, err)
		}
		d.offset.value = OffsetAndMetadata{Offset: v.Offset, LeaderEpoch: v.LeaderEpoch, Metadata: v.Metadata}
		if v.Version < 3 {
			d.offset.value.LeaderEpoch = -1
		}
		d.offset.value.CommitTime = unixMilli(v.CommitTimestamp)
	case groupKeyVersion:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return d, fmt.Errorf("%w: group key: %v", ErrCorruptRecord, err)
		}
		d.group = k.Group
		if r.Value == nil {
			d.delete = true
			return d, nil
		}
		v := new(kmsg.GroupMetadataValue)
		if err := v.ReadFrom(r.Value); err != nil {
			return d, fmt.Errorf("%w: group value for %s: %v", ErrCorruptRecord, k.Group, err)
		}
		d.meta = v
	default:
		return d, fmt.Errorf("%w: unknown key version %d", ErrCorruptRecord, version)
	}
	return d, nil
}

// MemStore is an in-memory Store for tests and for a broker run without
// durability. It is safe for concurrent use. FailAppends makes Append fail,
// to test the coordinator's handling of a store that cannot write.
type MemStore struct {
	mu struct {
		sync.Mutex
		recs []StoreRecord
		fail error
	}
}

// Append copies recs to the end of the log.
func (s *MemStore) Append(ctx context.Context, recs []StoreRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.fail != nil {
		return s.mu.fail
	}
	for _, r := range recs {
		c := StoreRecord{Key: append([]byte(nil), r.Key...)}
		if r.Value != nil {
			c.Value = append([]byte{}, r.Value...)
		}
		s.mu.recs = append(s.mu.recs, c)
	}
	return nil
}

// Replay calls fn for every record, in order, on a snapshot of the log.
func (s *MemStore) Replay(fn func(StoreRecord) error) error {
	for _, r := range s.Records() {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Records returns a snapshot of the log.
func (s *MemStore) Records() []StoreRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StoreRecord(nil), s.mu.recs...)
}

// FailAppends makes every later Append return err (nil restores success).
func (s *MemStore) FailAppends(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.fail = err
}
