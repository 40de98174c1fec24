package tiered

import (
	"fmt"
	"hash/crc32"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// mappedCRC32C checksums f's first size bytes where they lie, in the
// page cache, through a read-only mapping: a sealed segment is in the
// cache (it was just written) and a read would copy every byte once more
// only to hash it. fromBatches takes the sum from the batches' own CRCs
// (segmentCRC32C), which touches one page per large batch. Otherwise
// MADV_POPULATE_READ maps the pages in one call instead of a fault per
// 16 of them. A file truncated under the mapping faults (SIGBUS);
// SetPanicOnFault turns that into an error here, not a crash.
func mappedCRC32C(f *os.File, size int64, fromBatches bool) (sum uint32, err error) {
	if size == 0 {
		return 0, nil
	}
	if int64(int(size)) != size {
		return 0, errNoMapping
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, errNoMapping
	}
	var m []byte
	var merr error
	if err := rc.Control(func(fd uintptr) {
		m, merr = unix.Mmap(int(fd), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	}); err != nil || merr != nil {
		return 0, errNoMapping
	}
	defer unix.Munmap(m)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s changed while it was checksummed: %v", f.Name(), r)
		}
	}()
	if fromBatches {
		if sum, ok := segmentCRC32C(m); ok {
			return sum, nil
		}
	}
	_ = unix.Madvise(m, unix.MADV_POPULATE_READ) // older kernels: faults instead
	return crc32.Update(0, castagnoli, m), nil
}
