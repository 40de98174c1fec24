package partition

// Producer state recovery. A partition's producer state (the sequence
// numbers idempotence checks) is a pure function of its batch headers, so
// it can always be rebuilt by reading them; snapshots only bound how many
// must be read:
//
//   - at clean close: <partition>.json at the log end offset, used only
//     when the log still ends there, and removed once loaded (a later crash
//     must never pair it with a log that moved on);
//   - at every segment roll: <partition>@<offset>.json, the state before
//     offset, kept for the two newest rolls. After a crash the newest one at
//     or below the recovered log end is loaded and only the headers from its
//     offset on are read, so recovery reads about a segment's headers, not
//     the whole log's. One above the log end (the crash lost the tail it
//     described) is deleted.
//
// Offsets never renumber and the log only grows at its end, so the batches
// below a snapshot's offset are the ones it was taken from; compaction and
// retention remove batches but not the sequence history the snapshot holds.

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// RollSnapshotsKept is how many roll snapshots a partition keeps.
const RollSnapshotsKept = 2

// RollSnapWriters is how many roll snapshots a broker writes at once.
const RollSnapWriters = 4

// Snapshot file names are keyed by topic id, not name: a topic name may be
// 249 bytes (Kafka's limit), which with a suffix would not fit a 255-byte
// file name, and a re-created topic must not find its predecessor's state.
func snapshotKey(topic TopicID, p PartitionID) string {
	return fmt.Sprintf("%x-%d", topic[:], p)
}

// SnapshotName is the file of a partition's clean-close producer snapshot.
func SnapshotName(topic TopicID, p PartitionID) string { return snapshotKey(topic, p) + ".json" }

func (p *Partition) snapshotName() string { return SnapshotName(p.topicID, p.id) }

// '@' never occurs in a key, so these never collide with a partition's
// clean-close snapshot.
func RollSnapshotName(topic TopicID, p PartitionID, at record.Offset) string {
	return snapshotKey(topic, p) + "@" + strconv.FormatInt(int64(at), 10) + ".json"
}

// ParseSnapshotName returns the topic id and partition a snapshot file
// belongs to.
func ParseSnapshotName(name string) (TopicID, PartitionID, bool) {
	stem, _, _ := strings.Cut(strings.TrimSuffix(name, ".json"), "@")
	idHex, part, ok := strings.Cut(stem, "-")
	if !ok {
		return TopicID{}, 0, false
	}
	id, err := cluster.ParseTopicID(idHex)
	n, perr := strconv.ParseInt(part, 10, 32)
	if err != nil || perr != nil || n < 0 {
		return TopicID{}, 0, false
	}
	return id, PartitionID(n), true
}

// RollSnapshot is a producer snapshot taken when a segment rolled: the
// state at offset At, in file Name.
type RollSnapshot struct {
	Name string
	At   record.Offset
}

// RollSnapshots lists a partition's roll snapshots, oldest first.
func RollSnapshots(fs vfs.FS, dir string, topic TopicID, p PartitionID) []RollSnapshot {
	names, err := fs.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := snapshotKey(topic, p) + "@"
	var out []RollSnapshot
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok {
			continue
		}
		at, err := strconv.ParseInt(strings.TrimSuffix(rest, ".json"), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, RollSnapshot{Name: n, At: record.Offset(at)})
	}
	slices.SortFunc(out, func(a, b RollSnapshot) int { return cmp.Compare(a.At, b.At) })
	return out
}

// snapshotAtRollLocked saves the state at the log end offset after the log
// rolled, and prunes older roll snapshots. The state is encoded here, under
// the partition's lock; the file is written and fsynced in the background,
// because under heavy writeback one fsync can take a second, and the
// partition — with every connection whose next answer waits on it — would
// stall that long at each roll (as Kafka moved it off the append path,
// KAFKA-15046). A snapshot not yet durable at a crash costs only recovery
// time: recovery loads an older one and reads more headers. A failure is
// logged, not returned, for the same reason.
func (p *Partition) snapshotAtRollLocked() {
	at := p.log.LogEndOffset()
	p.mu.producers.DropAbortedBefore(p.abortedHorizon()) // tiered.go
	b, err := producer.EncodeSnapshot(at, p.mu.producers)
	if err != nil {
		p.node.Logger.Warn("broker: producer snapshot at segment roll", "topic", p.topic, "partition", p.id, "err", err)
		return
	}
	p.rollSnaps.Add(1)
	go func() {
		defer p.rollSnaps.Done()
		p.writeRollSnapshot(at, b)
	}()
}

// writeRollSnapshot writes one roll snapshot and prunes the oldest. Close,
// delete and truncation wait for it (rollSnaps), so none lands after them.
func (p *Partition) writeRollSnapshot(at record.Offset, b []byte) {
	p.node.RollSnapSlots <- struct{}{}
	defer func() { <-p.node.RollSnapSlots }()
	p.rollSnapMu.Lock()
	defer p.rollSnapMu.Unlock()
	fs, dir := p.node.FS, p.node.SnapshotDir
	if err := producer.WriteSnapshot(fs, dir, RollSnapshotName(p.topicID, p.id, at), b); err != nil {
		p.node.Logger.Warn("broker: producer snapshot at segment roll", "topic", p.topic, "partition", p.id, "err", err)
		return
	}
	snaps := RollSnapshots(fs, dir, p.topicID, p.id)
	keepFrom := p.rollSnapshotsNeededFrom() // tiered.go
	for len(snaps) > RollSnapshotsKept && snaps[0].At < keepFrom {
		if err := fs.Remove(filepath.Join(dir, snaps[0].Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			p.node.Logger.Warn("broker: prune producer snapshot", "name", snaps[0].Name, "err", err)
		}
		snaps = snaps[1:]
	}
}

// recoverProducers rebuilds the producer state at open (see the file
// comment): the clean-close snapshot if it matches the log end, else the
// newest usable roll snapshot plus the headers after it, else every header.
func (p *Partition) recoverProducers() (*producer.State, error) {
	fs, dir := p.node.FS, p.node.SnapshotDir
	end := p.log.LogEndOffset()
	path := filepath.Join(dir, p.snapshotName())
	raw, err := vfs.ReadFile(fs, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		p.node.Logger.Warn("broker: unreadable producer snapshot", "path", path, "err", err)
	default:
		s, at, derr := producer.DecodeSnapshot(raw)
		if rerr := fs.Remove(path); rerr != nil {
			return nil, fmt.Errorf("remove snapshot: %w", rerr)
		}
		if derr == nil && at == end {
			return s, nil
		}
		p.node.Logger.Info("broker: stale producer snapshot", "path", path, "snapshot", at, "end", end)
	}
	return p.rebuildProducers(end)
}

// rebuildProducers computes the producer state at end from the newest
// usable roll snapshot at or below it plus the headers after it (every
// header without one), deleting roll snapshots above end: they describe
// batches the log no longer holds.
func (p *Partition) rebuildProducers(end record.Offset) (*producer.State, error) {
	p.rollSnaps.Wait() // a snapshot above a truncation must not land after it
	fs, dir := p.node.FS, p.node.SnapshotDir
	var err error
	s, from := producer.NewState(), record.Offset(0)
	snaps := RollSnapshots(fs, dir, p.topicID, p.id)
	for i := len(snaps) - 1; i >= 0; i-- {
		r := snaps[i]
		rpath := filepath.Join(dir, r.Name)
		if r.At > end { // a crash or a truncation took what it describes
			if err := fs.Remove(rpath); err != nil {
				return nil, fmt.Errorf("remove stale snapshot: %w", err)
			}
			continue
		}
		raw, err := vfs.ReadFile(fs, rpath)
		if err == nil {
			var at record.Offset
			if s, at, err = producer.DecodeSnapshot(raw); err == nil && at == r.At {
				from = at
				break
			}
		}
		p.node.Logger.Warn("broker: unusable producer snapshot", "path", rpath, "err", err)
		s = producer.NewState()
	}
	read := 0
	err = p.log.ScanHeadersControl(from, func(h record.Header, control []byte) error {
		p.observeLocked(s, h, control)
		read++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan from offset %d: %w", from, err)
	}
	p.node.Logger.Debug("broker: producer state rebuilt", "topic", p.topic, "partition", p.id, "from", from, "end", end, "batches_read", read)
	return s, nil
}

// RemoveSnapshots deletes a partition's producer snapshots, if any.
func RemoveSnapshots(node *Node, topic TopicID, p PartitionID) {
	dir := node.SnapshotDir
	names := []string{SnapshotName(topic, p)}
	for _, r := range RollSnapshots(node.FS, dir, topic, p) {
		names = append(names, r.Name)
	}
	for _, name := range names {
		err := node.FS.Remove(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			node.Logger.Warn("broker: cannot remove producer snapshot", "topic", topic, "partition", p, "err", err)
		}
	}
}

// WaitSnapshots waits for the roll snapshots being written in the
// background.
func (p *Partition) WaitSnapshots() { p.rollSnaps.Wait() }
