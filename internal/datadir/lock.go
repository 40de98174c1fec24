package datadir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/strandmq/strand/internal/vfs"
)

// LockFile is the data directory's lock (Kafka's .lock): held by the one
// process that owns the directory, so two brokers never write one log.
const LockFile = ".lock"

// Lock takes the data directory's lock, or says who holds it.
func Lock(fs vfs.FS, dir string) (io.Closer, error) {
	l, err := vfs.Lock(fs, filepath.Join(dir, LockFile), strconv.Itoa(os.Getpid()))
	var held *vfs.LockedError
	if errors.As(err, &held) {
		who := "another process"
		if held.Holder != "" {
			who = "process " + held.Holder
		}
		return nil, fmt.Errorf("broker: data directory %s is in use by %s (its %s is locked): stop that broker or choose another --data-dir: %w",
			dir, who, LockFile, err)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: lock data directory %s: %w", dir, err)
	}
	return l, nil
}
