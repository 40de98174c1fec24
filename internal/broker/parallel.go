package broker

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ioWorkers is how many partitions open or close at once. The work is
// waiting on the disk (fsyncs, small reads); a few dozen in flight let
// the device and the journal batch them, far beyond the core count.
const ioWorkers = 32

// forEach runs fn(0) … fn(n-1) on up to ioWorkers goroutines and returns
// their errors joined.
func forEach(n int, fn func(i int) error) error { return forEachN(n, ioWorkers, fn) }

// forEachN is forEach on up to workers goroutines.
func forEachN(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range min(n, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
