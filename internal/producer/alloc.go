package producer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/strandmq/strand/internal/vfs"
)

// IDBlock is how many producer ids one persisted reservation covers.
const IDBlock = 1000

// idFile is the allocator's file name inside its directory.
const idFile = "producer-ids.json"

type idFileContents struct {
	// Limit is the first id not yet reserved: every id below it may have
	// been handed out, so a restarted allocator starts there.
	Limit int64 `json:"limit"`
}

// Allocator hands out producer ids that are never reused, even across
// restarts and crashes. It is safe for concurrent use.
type Allocator struct {
	fs      vfs.FS
	dir     string
	existed bool // the file was there at open

	mu struct {
		sync.Mutex
		next  ID
		limit ID
	}
}

// OpenAllocator loads (or creates) the allocator whose state lives in
// dir/producer-ids.json.
func OpenAllocator(fs vfs.FS, dir string) (*Allocator, error) {
	a := &Allocator{fs: fs, dir: dir}
	b, err := vfs.ReadFile(fs, filepath.Join(dir, idFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("producer: read %s: %w", idFile, err)
	default:
		var c idFileContents
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("producer: parse %s: %w", idFile, err)
		}
		if c.Limit < 0 {
			return nil, fmt.Errorf("producer: %s: negative limit %d", idFile, c.Limit)
		}
		a.mu.next, a.mu.limit = ID(c.Limit), ID(c.Limit)
		a.existed = true
	}
	return a, nil
}

// Existed reports whether the allocator's file was there when it opened: a
// broker with data but no file lost it.
func (a *Allocator) Existed() bool { return a.existed }

// Above makes every id up to and including used unavailable: the logs hold
// it, whatever the file says (it may be lost or older than the logs). The
// next Next reserves a new block above it.
func (a *Allocator) Above(used ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if used < a.mu.next {
		return
	}
	a.mu.next = used + 1
	if a.mu.limit < a.mu.next {
		a.mu.limit = a.mu.next // Next persists a reservation first
	}
}

// Floor returns the first id this allocator has not reserved: every id
// below it may have been handed out.
func (a *Allocator) Floor() ID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return max(a.mu.limit, a.mu.next)
}

// Next returns a fresh producer id. When the current block is used up it
// first persists the next block's limit (one fsync per IDBlock ids).
func (a *Allocator) Next() (ID, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.next >= a.mu.limit {
		limit := a.mu.next + IDBlock
		b, _ := json.Marshal(idFileContents{Limit: int64(limit)})
		if err := vfs.WriteFileSync(a.fs, a.dir, filepath.Join(a.dir, idFile), b); err != nil {
			return NoID, fmt.Errorf("producer: reserve ids up to %d: %w", limit, err)
		}
		a.mu.limit = limit
	}
	id := a.mu.next
	a.mu.next++
	return id, nil
}
