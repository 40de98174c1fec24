//go:build !unix

package kafka

// diskSpace is unknown on this platform.
func diskSpace(string) (total, usable int64) { return -1, -1 }
