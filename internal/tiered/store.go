package tiered

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned by Store.Get for a key the store does not hold.
var ErrNotFound = errors.New("tiered: object not found")

// Store is an object store: a flat namespace of immutable objects.
// Implementations are safe for concurrent use.
type Store interface {
	// Put stores size bytes read from body under key.
	Put(ctx context.Context, key string, body io.Reader, size int64) error
	// Get returns n bytes of key from offset off; n < 0 reads to the end.
	Get(ctx context.Context, key string, off, n int64) ([]byte, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every object under prefix, in key order.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// ObjectInfo is one listed object.
type ObjectInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}
