//go:build !linux

package kafka

import "time"

// threadCPU has no per-thread CPU clock here: request_percentage falls
// back to wall time (cpuOf).
func threadCPU() (time.Duration, bool) { return 0, false }
