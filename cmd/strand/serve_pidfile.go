package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// A pid file lets a shell stop exactly the broker it started
// (`kill $(cat n1.pid)`), where `pkill -f "strand serve …"` would match
// every broker on a shared host whose command line looks alike.

// writePidFile writes this process's id to path (through a temporary file
// and a rename, so a reader never sees it half written).
func writePidFile(path string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("--pid-file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("--pid-file: %w", err)
	}
	return nil
}

// removePidFile removes path at a clean stop, if it still names this
// process (a broker started after this one on the same file keeps it).
func removePidFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil || string(raw) != strconv.Itoa(os.Getpid())+"\n" {
		return nil
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("--pid-file: %w", err)
	}
	return nil
}
