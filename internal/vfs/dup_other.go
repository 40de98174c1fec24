//go:build !unix

package vfs

import "os"

// dupFile is not available on this platform.
func dupFile(*os.File) (*os.File, error) { return nil, ErrNoDescriptor }
