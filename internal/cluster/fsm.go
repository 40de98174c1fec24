package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// fsm is the metadata state machine raft drives. Apply is its only
// writer and is deterministic: the same entries give the same image on
// every node (no clock, no randomness, no map-order dependence — ids and
// the cluster id are chosen by the proposer, inside the records).
type fsm struct {
	img   atomic.Pointer[Image]
	index atomic.Uint64 // raft index of the last applied entry

	subsMu sync.Mutex
	subs   map[int]func(*Image)
	nextID int
}

func newFSM() *fsm {
	f := &fsm{subs: map[int]func(*Image){}}
	f.img.Store(NewImage(""))
	return f
}

// applyResult is what Apply returns to the proposer.
type applyResult struct {
	img *Image
	err error
}

// Apply applies one batch atomically. A batch that conflicts with the
// image (a name taken, a topic gone) changes nothing and reports the
// conflict to its proposer; every node reaches the same verdict. An entry
// that does not decode is a version this node does not know: it panics
// rather than skip it and fork.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	recs, err := DecodeRecords(l.Data)
	if err != nil {
		panic(fmt.Sprintf("cluster: raft entry %d: %v", l.Index, err))
	}
	next, err := f.img.Load().WithAt(int64(l.Index), recs...)
	f.index.Store(l.Index)
	if err != nil {
		return applyResult{err: err}
	}
	f.img.Store(next)
	f.notify(next)
	return applyResult{img: next}
}

func (f *fsm) notify(im *Image) {
	f.subsMu.Lock()
	subs := make([]func(*Image), 0, len(f.subs))
	for _, fn := range f.subs {
		subs = append(subs, fn)
	}
	f.subsMu.Unlock()
	for _, fn := range subs {
		fn(im)
	}
}

func (f *fsm) subscribe(fn func(*Image)) func() {
	f.subsMu.Lock()
	defer f.subsMu.Unlock()
	id := f.nextID
	f.nextID++
	f.subs[id] = fn
	return func() {
		f.subsMu.Lock()
		defer f.subsMu.Unlock()
		delete(f.subs, id)
	}
}

// snapshotForm is an image as a snapshot stores it.
type snapshotForm struct {
	ClusterID  string                             `json:"clusterId"`
	Topics     []Topic                            `json:"topics"`
	Deleted    []TopicID                          `json:"deleted"`
	Brokers    []BrokerReg                        `json:"brokers"`
	Partitions map[TopicID]map[int32]PartitionReg `json:"partitions"`
	// NextProducerID: absent in snapshots from before producer id blocks.
	NextProducerID int64 `json:"nextProducerId,omitempty"`
	// ACLs, ACLVersion: absent in snapshots from before ACLs.
	ACLs       []byte `json:"acls,omitempty"`
	ACLVersion int64  `json:"aclVersion,omitempty"`
	// Scram: absent in snapshots from before SCRAM credentials.
	Scram map[string]map[string]ScramCredential `json:"scram,omitempty"`
	// Quotas: absent in snapshots from before client quotas.
	Quotas map[string]map[string]float64 `json:"clientQuotas,omitempty"`
	// Features: absent in snapshots from before feature levels, and
	// while none is finalized.
	Features map[string]int16 `json:"features,omitempty"`
	// BrokerConfigs: absent in snapshots from before metadata.version 3,
	// and while no dynamic broker config is set.
	BrokerConfigs map[NodeID]map[string]string `json:"brokerConfigs,omitempty"`
	// GroupConfigs: absent in snapshots from before group configs
	// (metadata.version 4), and while no group has one.
	GroupConfigs map[string]map[string]string `json:"groupConfigs,omitempty"`
}

func encodeImage(im *Image) ([]byte, error) {
	return json.Marshal(snapshotForm{ClusterID: im.ClusterID(), Topics: im.Topics(), Deleted: im.Deleted(),
		Brokers: im.Brokers(), Partitions: im.partitions, NextProducerID: im.nextProducerID,
		ACLs: im.acls, ACLVersion: im.aclVersion, Scram: im.scram, Quotas: im.quotas, Features: im.features, BrokerConfigs: im.brokerConfigs,
		GroupConfigs: im.groupConfigs})
}

func decodeImage(b []byte) (*Image, error) {
	var s snapshotForm
	if err := strict(b, &s); err != nil {
		return nil, err
	}
	im := NewImage(s.ClusterID)
	for _, t := range s.Topics {
		im.topics[t.Name] = t
		im.names[t.ID] = t.Name
	}
	for _, id := range s.Deleted {
		im.deleted[id] = true
	}
	for _, b := range s.Brokers {
		im.brokers[b.ID] = b
	}
	for id, ps := range s.Partitions {
		im.partitions[id] = ps
	}
	im.nextProducerID = s.NextProducerID
	im.acls, im.aclVersion = s.ACLs, s.ACLVersion
	im.scram, im.quotas = s.Scram, s.Quotas
	if err := checkSupported(s.Features); err != nil {
		return nil, err
	}
	im.features = s.Features
	im.brokerConfigs = s.BrokerConfigs
	im.groupConfigs = s.GroupConfigs
	return im, nil
}

// Snapshot captures the current image (immutable: no copy needed).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return imageSnapshot{f.img.Load()}, nil
}

// Restore replaces the image with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	im, err := decodeImage(b)
	if err != nil {
		return fmt.Errorf("cluster: restore snapshot: %w", err)
	}
	f.img.Store(im)
	f.notify(im)
	return nil
}

type imageSnapshot struct{ im *Image }

func (s imageSnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := encodeImage(s.im)
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (imageSnapshot) Release() {}
