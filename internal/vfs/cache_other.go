//go:build !linux

package vfs

import "os"

// osCacheHint does nothing where sync_file_range and fallocate are not
// available.
func osCacheHint(*os.File, hint, int64, int64) {}
