package tiered

import (
	"context"
	"fmt"

	"github.com/strandmq/strand/internal/record"
)

// KIP-405's follower path: a replica whose log ends below its leader's
// local log start does not copy what the store holds. It starts its local
// log at a remote segment boundary, with the leader-epoch entries and the
// producer state the store recorded for that point.

// RemoteStart is where a replica may start its local log when its leader's
// local log starts at leaderStart: the end of the remote segment holding
// leaderStart-1, with the leader-epoch entries up to there and the producer
// snapshot uploaded with that segment (nil when it has none).
type RemoteStart struct {
	At       record.Offset
	Epochs   []EpochStart
	Snapshot []byte
}

// segmentSuffixes are the object suffixes of one uploaded segment.
func segmentSuffixes(s Segment) []string {
	if s.Snapshot {
		return []string{".log", ".index", ".timeindex", ".snapshot"}
	}
	return []string{".log", ".index", ".timeindex"}
}

// FollowerStart reads the newest manifest and returns where a replica
// starts when its leader's local log starts at leaderStart. It fails with
// ErrOutOfRange when no remote segment ends at or past leaderStart-1: the
// store does not hold what lies below the leader's local start.
func (p *Partition) FollowerStart(ctx context.Context, leaderStart record.Offset) (RemoteStart, error) {
	if err := p.Load(ctx); err != nil {
		return RemoteStart{}, err
	}
	man := p.Manifest()
	i := man.find(leaderStart - 1)
	if leaderStart <= 0 || i == len(man.Segments) || man.Segments[i].Start > leaderStart-1 {
		return RemoteStart{}, fmt.Errorf("%w: %s holds no segment ending at %d", ErrOutOfRange, p.prefix, leaderStart)
	}
	seg := man.Segments[i]
	rs := RemoteStart{At: seg.Next}
	for _, s := range man.Segments[:i+1] {
		for _, e := range s.Epochs {
			if n := len(rs.Epochs); n > 0 && rs.Epochs[n-1].Epoch >= e.Epoch {
				continue // the entry in force at a segment's base repeats
			}
			rs.Epochs = append(rs.Epochs, e)
		}
	}
	if !seg.Snapshot {
		return rs, nil
	}
	key := segmentKey(p.prefix, seg, ".snapshot")
	err := p.t.retry(ctx, "get "+key, func() error {
		var err error
		rs.Snapshot, err = p.t.cfg.Store.Get(ctx, key, 0, -1)
		return err
	})
	if err != nil {
		return RemoteStart{}, err
	}
	return rs, nil
}
