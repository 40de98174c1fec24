package partition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered"
	"github.com/strandmq/strand/internal/vfs"
)

// KIP-405's replica side of tiered storage: the producer snapshot a
// leader uploads beside each segment, and a follower that starts from the
// remote tier instead of copying what the store already holds.

// StartFromTier is the follower's answer to OFFSET_MOVED_TO_TIERED_STORAGE
// (its log ends below the leader's local log start leaderStart): it reads
// the manifest and starts its log empty at the end of the remote segment
// holding leaderStart-1, with the leader-epoch entries and the producer
// state the leader uploaded with that segment. It returns the offset the
// log starts at. When the store holds no such segment it starts at
// leaderStart with no history, as a replica of an untiered topic does.
func (p *Partition) StartFromTier(ctx context.Context, epoch record.Epoch, leaderStart record.Offset) (record.Offset, error) {
	if !p.isTiered() {
		return leaderStart, p.ResetAsFollower(epoch, leaderStart)
	}
	rs, err := p.followerTier().FollowerStart(ctx, leaderStart)
	if errors.Is(err, tiered.ErrOutOfRange) {
		p.node.Logger.Warn("broker: the remote tier does not reach the leader's local log start; starting there without its producer state",
			"topic", p.topic, "partition", p.id, "leader_local_start", leaderStart, "err", err)
		return leaderStart, p.ResetAsFollower(epoch, leaderStart)
	}
	if err != nil {
		return record.NoOffset, fmt.Errorf("broker: %s-%d: read the remote tier to start from the leader's local log start %d: %w", p.topic, p.id, leaderStart, err)
	}
	state := producer.NewState()
	if rs.Snapshot != nil {
		s, at, err := producer.DecodeSnapshot(rs.Snapshot)
		if err != nil || at != rs.At {
			return record.NoOffset, fmt.Errorf("broker: %s-%d: the remote producer snapshot at %d is unusable (at %d): %v", p.topic, p.id, rs.At, at, err)
		}
		state = s
	}
	epochs := make([]partlog.EpochStart, 0, len(rs.Epochs))
	for _, e := range rs.Epochs {
		epochs = append(epochs, partlog.EpochStart{Epoch: e.Epoch, Start: e.Start})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.FollowerAt(epoch) {
		return record.NoOffset, nil
	}
	p.rollSnaps.Wait()
	RemoveSnapshots(p.node, p.topicID, p.id) // they describe the log being replaced
	if err := p.log.ResetToWithEpochs(rs.At, epochs); err != nil {
		return record.NoOffset, storageError(p, err)
	}
	if rs.Snapshot != nil {
		// Kept as the roll snapshot at the new start, so a restart
		// rebuilds the same state from it and the headers after.
		if err := producer.WriteSnapshot(p.node.FS, p.node.SnapshotDir, RollSnapshotName(p.topicID, p.id, rs.At), rs.Snapshot); err != nil {
			return record.NoOffset, fmt.Errorf("broker: %s-%d: keep the remote producer snapshot: %w", p.topic, p.id, err)
		}
	}
	p.mu.producers = state
	p.mu.rolledAt = p.log.ActiveBase()
	p.txnActive.Store(state.Unstable())
	p.node.Logger.Info("broker: follower starts from the remote tier", "topic", p.topic, "partition", p.id,
		"log_start", rs.At, "leader_local_start", leaderStart, "epochs", len(epochs), "producer_snapshot", rs.Snapshot != nil)
	return rs.At, nil
}

// errScanDone ends a header scan early.
var errScanDone = errors.New("scan done")

// producerSnapshotAt encodes the producer state as of offset at (a sealed
// segment's next offset) for upload: the roll snapshot taken there when
// it exists, else the newest one below plus the headers up to at.
func (p *Partition) producerSnapshotAt(at record.Offset) ([]byte, error) {
	fs, dir := p.node.FS, p.node.SnapshotDir
	s, from := producer.NewState(), record.Offset(0)
	p.rollSnapMu.Lock()
	snaps := RollSnapshots(fs, dir, p.topicID, p.id)
	for i := len(snaps) - 1; i >= 0; i-- {
		if snaps[i].At > at {
			continue
		}
		raw, err := vfs.ReadFile(fs, filepath.Join(dir, snaps[i].Name))
		if err != nil {
			continue
		}
		st, sat, err := producer.DecodeSnapshot(raw)
		if err != nil || sat != snaps[i].At {
			continue
		}
		if sat == at {
			p.rollSnapMu.Unlock()
			return raw, nil
		}
		s, from = st, sat
		break
	}
	p.rollSnapMu.Unlock()
	err := p.log.ScanHeadersControl(from, func(h record.Header, control []byte) error {
		if h.BaseOffset >= at {
			return errScanDone
		}
		p.observeLocked(s, h, control)
		return nil
	})
	if err != nil && !errors.Is(err, errScanDone) {
		return nil, fmt.Errorf("broker: %s-%d: producer state at %d: %w", p.topic, p.id, at, err)
	}
	return producer.EncodeSnapshot(at, s)
}

// rollSnapshotsNeededFrom is the offset from which a tiered partition
// keeps every roll snapshot: each is the producer snapshot of the sealed
// segment ending there, uploaded with it. Those at or below what the store
// holds, or below the local log start, may go; an untiered partition
// keeps only the newest RollSnapshotsKept.
func (p *Partition) rollSnapshotsNeededFrom() record.Offset {
	if !p.isTiered() {
		return math.MaxInt64
	}
	uploaded := record.NoOffset
	if tp := p.tier.Load(); tp != nil {
		uploaded = tp.UploadedEnd()
	}
	return max(uploaded, p.log.LogStartOffset()) + 1
}
