package broker

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

	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// rollSnapshotsKept is how many roll snapshots a partition keeps.
const rollSnapshotsKept = 2

// rollSnapWriters is how many roll snapshots a broker writes at once.
const rollSnapWriters = 4

// Snapshot file names are keyed by topic id, not name: a topic name may be
// 249 bytes (Kafka's limit), which with a suffix would not fit a 255-byte
// file name, and a re-created topic must not find its predecessor's state.
func snapshotKey(topic TopicID, p PartitionID) string {
	return fmt.Sprintf("%x-%d", topic[:], p)
}

func snapshotName(topic TopicID, p PartitionID) string { return snapshotKey(topic, p) + ".json" }

func (p *Partition) snapshotName() string { return snapshotName(p.topicID, p.id) }

// '@' never occurs in a key, so these never collide with a partition's
// clean-close snapshot.
func rollSnapshotName(topic TopicID, p PartitionID, at record.Offset) string {
	return snapshotKey(topic, p) + "@" + strconv.FormatInt(int64(at), 10) + ".json"
}

// parseSnapshotName returns the topic id and partition a snapshot file
// belongs to.
func parseSnapshotName(name string) (TopicID, PartitionID, bool) {
	stem, _, _ := strings.Cut(strings.TrimSuffix(name, ".json"), "@")
	idHex, part, ok := strings.Cut(stem, "-")
	if !ok {
		return TopicID{}, 0, false
	}
	id, err := parseTopicID(idHex)
	n, perr := strconv.ParseInt(part, 10, 32)
	if err != nil || perr != nil || n < 0 {
		return TopicID{}, 0, false
	}
	return id, PartitionID(n), true
}

type rollSnapshot struct {
	name string
	at   record.Offset
}

// rollSnapshots lists a partition's roll snapshots, oldest first.
func rollSnapshots(fs vfs.FS, dir string, topic TopicID, p PartitionID) []rollSnapshot {
	names, err := fs.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := snapshotKey(topic, p) + "@"
	var out []rollSnapshot
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok {
			continue
		}
		at, err := strconv.ParseInt(strings.TrimSuffix(rest, ".json"), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, rollSnapshot{name: n, at: record.Offset(at)})
	}
	slices.SortFunc(out, func(a, b rollSnapshot) int { return cmp.Compare(a.at, b.at) })
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
		p.b.logger.Warn("broker: producer snapshot at segment roll", "topic", p.topic, "partition", p.id, "err", err)
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
	p.b.rollSnapSlots <- struct{}{}
	defer func() { <-p.b.rollSnapSlots }()
	p.rollSnapMu.Lock()
	defer p.rollSnapMu.Unlock()
	fs, dir := p.b.fs, filepath.Join(p.b.cfg.Dir, producerStateDir)
	if err := producer.WriteSnapshot(fs, dir, rollSnapshotName(p.topicID, p.id, at), b); err != nil {
		p.b.logger.Warn("broker: producer snapshot at segment roll", "topic", p.topic, "partition", p.id, "err", err)
		return
	}
	snaps := rollSnapshots(fs, dir, p.topicID, p.id)
	for len(snaps) > rollSnapshotsKept {
		if err := fs.Remove(filepath.Join(dir, snaps[0].name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			p.b.logger.Warn("broker: prune producer snapshot", "name", snaps[0].name, "err", err)
		}
		snaps = snaps[1:]
	}
}

// recoverProducers rebuilds the producer state at open (see the file
// comment): the clean-close snapshot if it matches the log end, else the
// newest usable roll snapshot plus the headers after it, else every header.
func (p *Partition) recoverProducers() (*producer.State, error) {
	fs, dir := p.b.fs, filepath.Join(p.b.cfg.Dir, producerStateDir)
	end := p.log.LogEndOffset()
	path := filepath.Join(dir, p.snapshotName())
	raw, err := vfs.ReadFile(fs, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		p.b.logger.Warn("broker: unreadable producer snapshot", "path", path, "err", err)
	default:
		s, at, derr := producer.DecodeSnapshot(raw)
		if rerr := fs.Remove(path); rerr != nil {
			return nil, fmt.Errorf("remove snapshot: %w", rerr)
		}
		if derr == nil && at == end {
			return s, nil
		}
		p.b.logger.Info("broker: stale producer snapshot", "path", path, "snapshot", at, "end", end)
	}
	return p.rebuildProducers(end)
}

// rebuildProducers computes the producer state at end from the newest
// usable roll snapshot at or below it plus the headers after it (every
// header without one), deleting roll snapshots above end: they describe
// batches the log no longer holds.
func (p *Partition) rebuildProducers(end record.Offset) (*producer.State, error) {
	p.rollSnaps.Wait() // a snapshot above a truncation must not land after it
	fs, dir := p.b.fs, filepath.Join(p.b.cfg.Dir, producerStateDir)
	var err error
	s, from := producer.NewState(), record.Offset(0)
	snaps := rollSnapshots(fs, dir, p.topicID, p.id)
	for i := len(snaps) - 1; i >= 0; i-- {
		r := snaps[i]
		rpath := filepath.Join(dir, r.name)
		if r.at > end { // a crash or a truncation took what it describes
			if err := fs.Remove(rpath); err != nil {
				return nil, fmt.Errorf("remove stale snapshot: %w", err)
			}
			continue
		}
		raw, err := vfs.ReadFile(fs, rpath)
		if err == nil {
			var at record.Offset
			if s, at, err = producer.DecodeSnapshot(raw); err == nil && at == r.at {
				from = at
				break
			}
		}
		p.b.logger.Warn("broker: unusable producer snapshot", "path", rpath, "err", err)
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
	p.b.logger.Debug("broker: producer state rebuilt", "topic", p.topic, "partition", p.id, "from", from, "end", end, "batches_read", read)
	return s, nil
}
