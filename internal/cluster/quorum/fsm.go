package quorum

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/strandmq/strand/internal/cluster"
)

// fsm is the metadata state machine raft drives. Apply is its only
// writer and is deterministic: the same entries give the same image on
// every node (no clock, no randomness, no map-order dependence — ids and
// the cluster id are chosen by the proposer, inside the records).
type fsm struct {
	img   atomic.Pointer[cluster.Image]
	index atomic.Uint64 // raft index of the last applied entry

	subsMu sync.Mutex
	subs   map[int]func(*cluster.Image)
	nextID int
}

func newFSM() *fsm {
	f := &fsm{subs: map[int]func(*cluster.Image){}}
	f.img.Store(cluster.NewImage(""))
	return f
}

// applyResult is what Apply returns to the proposer.
type applyResult struct {
	img *cluster.Image
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
	recs, err := cluster.DecodeRecords(l.Data)
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

func (f *fsm) notify(im *cluster.Image) {
	f.subsMu.Lock()
	subs := make([]func(*cluster.Image), 0, len(f.subs))
	for _, fn := range f.subs {
		subs = append(subs, fn)
	}
	f.subsMu.Unlock()
	for _, fn := range subs {
		fn(im)
	}
}

func (f *fsm) subscribe(fn func(*cluster.Image)) func() {
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
	im, err := cluster.DecodeImage(b)
	if err != nil {
		return fmt.Errorf("cluster: restore snapshot: %w", err)
	}
	f.img.Store(im)
	f.notify(im)
	return nil
}

type imageSnapshot struct{ im *cluster.Image }

func (s imageSnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := cluster.EncodeImage(s.im)
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
