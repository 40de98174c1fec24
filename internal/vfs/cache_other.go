//go:build !linux

package vfs

import "os"

// osCacheHint does nothing where sync_file_range is not available.
func osCacheHint(*os.File, bool, int64, int64) {}
