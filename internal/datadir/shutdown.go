package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
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

// ShutdownMarker is the clean-shutdown marker file.
const ShutdownMarker = "clean-shutdown"

type shutdownMarkerForm struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// TakeShutdownMarker returns the epoch the last process recorded at a
// clean shutdown — cluster.UncleanShutdown if it recorded none — and
// removes the marker, so a crash of this process is not taken for clean.
func TakeShutdownMarker(fsys vfs.FS, dir string) (int64, error) {
	path := filepath.Join(dir, ShutdownMarker)
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, iofs.ErrNotExist) {
		return cluster.UncleanShutdown, nil
	}
	if err != nil {
		return 0, fmt.Errorf("broker: read %s: %w", ShutdownMarker, err)
	}
	epoch := cluster.UncleanShutdown
	var m shutdownMarkerForm
	if json.Unmarshal(data, &m) == nil && m.Version == 1 && m.BrokerEpoch > 0 {
		epoch = m.BrokerEpoch
	}
	if err := fsys.Remove(path); err != nil {
		return 0, fmt.Errorf("broker: remove %s: %w", ShutdownMarker, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return 0, fmt.Errorf("broker: remove %s: %w", ShutdownMarker, err)
	}
	return epoch, nil
}

// WriteShutdownMarker records a clean shutdown at broker epoch epoch; the
// logs must be closed (flushed) first.
func WriteShutdownMarker(fsys vfs.FS, dir string, epoch int64) error {
	data, _ := json.Marshal(shutdownMarkerForm{Version: 1, BrokerEpoch: epoch})
	if err := vfs.WriteFileSync(fsys, dir, filepath.Join(dir, ShutdownMarker), data); err != nil {
		return fmt.Errorf("broker: write %s: %w", ShutdownMarker, err)
	}
	return nil
}
