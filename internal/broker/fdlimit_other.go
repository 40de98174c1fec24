//go:build !unix

package broker

// defaultMaxOpenLogFiles: no cap where the open-file limit is not read.
func defaultMaxOpenLogFiles() int { return -1 }
