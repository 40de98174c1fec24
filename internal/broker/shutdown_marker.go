package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/vfs"
)

// A cluster member records a clean shutdown (REPLICATION.md §3) in its
// data directory: after every partition log is closed — flushed — it
// writes its broker epoch to clean-shutdown, fsynced. The next process
// reads and removes it (durably) before it registers, and sends the
// epoch as its PreviousBrokerEpoch; no marker means the last process
// died with unflushed logs, and the controller takes this node out of
// every ISR and ELR until it has caught up (KIP-966). Kafka writes the
// same (.kafka_cleanshutdown, per log directory).
//
//	clean-shutdown: {"version":1,"brokerEpoch":<int64>}

const shutdownMarker = "clean-shutdown"

type shutdownMarkerForm struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// takeShutdownMarker returns the epoch the last process recorded at a
// clean shutdown — cluster.UncleanShutdown if it recorded none — and
// removes the marker, so a crash of this process is not taken for clean.
func (b *Broker) takeShutdownMarker() (int64, error) {
	path := filepath.Join(b.cfg.Dir, shutdownMarker)
	data, err := vfs.ReadFile(b.fs, path)
	if errors.Is(err, fs.ErrNotExist) {
		return cluster.UncleanShutdown, nil
	}
	if err != nil {
		return 0, fmt.Errorf("broker: read %s: %w", shutdownMarker, err)
	}
	epoch := cluster.UncleanShutdown
	var m shutdownMarkerForm
	if json.Unmarshal(data, &m) == nil && m.Version == 1 && m.BrokerEpoch > 0 {
		epoch = m.BrokerEpoch
	}
	if err := b.fs.Remove(path); err != nil {
		return 0, fmt.Errorf("broker: remove %s: %w", shutdownMarker, err)
	}
	if err := b.fs.SyncDir(b.cfg.Dir); err != nil {
		return 0, fmt.Errorf("broker: remove %s: %w", shutdownMarker, err)
	}
	return epoch, nil
}

// writeShutdownMarker records a clean shutdown at broker epoch epoch; the
// logs must be closed (flushed) first.
func (b *Broker) writeShutdownMarker(epoch int64) error {
	data, _ := json.Marshal(shutdownMarkerForm{Version: 1, BrokerEpoch: epoch})
	if err := vfs.WriteFileSync(b.fs, b.cfg.Dir, filepath.Join(b.cfg.Dir, shutdownMarker), data); err != nil {
		return fmt.Errorf("broker: write %s: %w", shutdownMarker, err)
	}
	return nil
}

// memberEpoch is this member's broker epoch, 0 on a single node or before
// it registered.
func (b *Broker) memberEpoch() int64 {
	if b.member == nil {
		return 0
	}
	return b.member.epoch.Load()
}
