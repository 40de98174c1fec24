package compact

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// CheckpointFile is the name of the cleaner's checkpoint in a partition
// directory. Its format is one line of text, written atomically:
//
//	v1 <first dirty offset> <earliest pending delete horizon, ms; 0: none>
const CheckpointFile = "cleaner-offset-checkpoint"

// checkpoint is what one Clean leaves for the next.
type checkpoint struct {
	// dirty is the first offset not yet cleaned: every sealed segment that
	// ends at or before it has been through the cleaner.
	dirty record.Offset
	// horizon is the earliest delete horizon of a kept tombstone (ms), or
	// 0: the next Clean after it is due even without new dirty data.
	horizon int64
}

// readCheckpoint returns the partition's checkpoint; a missing or unreadable
// one is the zero checkpoint (clean everything), which is always safe.
func readCheckpoint(fs vfs.FS, dir string) (checkpoint, error) {
	raw, err := vfs.ReadFile(fs, filepath.Join(dir, CheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return checkpoint{}, nil
	}
	if err != nil {
		return checkpoint{}, fmt.Errorf("compact: read checkpoint: %w", err)
	}
	f := strings.Fields(string(raw))
	if len(f) != 3 || f[0] != "v1" {
		return checkpoint{}, fmt.Errorf("compact: checkpoint %q: bad format", raw)
	}
	dirty, err1 := strconv.ParseInt(f[1], 10, 64)
	horizon, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || dirty < 0 || horizon < 0 {
		return checkpoint{}, fmt.Errorf("compact: checkpoint %q: bad number", raw)
	}
	return checkpoint{dirty: record.Offset(dirty), horizon: horizon}, nil
}

func writeCheckpoint(fs vfs.FS, dir string, c checkpoint) error {
	line := fmt.Sprintf("v1 %d %d\n", c.dirty, c.horizon)
	if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, CheckpointFile), []byte(line)); err != nil {
		return fmt.Errorf("compact: write checkpoint: %w", err)
	}
	return nil
}
