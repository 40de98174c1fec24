package producer

import (
	"testing"

	"github.com/strandmq/strand/internal/vfs"
)

// FuzzDecodeSnapshot: a damaged snapshot file decodes to an error or to a
// state that keeps the per-producer bound, never a panic.
func FuzzDecodeSnapshot(f *testing.F) {
	s := NewState()
	for i := range int32(7) {
		s.Update(1, 0, Batch{FirstSeq: i, LastSeq: i, BaseOffset: 0, LastOffset: 0})
	}
	fs := vfs.NewMem()
	if err := SaveSnapshot(fs, "/", "s.json", 7, s); err != nil {
		f.Fatal(err)
	}
	seed, err := vfs.ReadFile(fs, "/s.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"offset":1,"producers":[{"id":1,"epoch":0,"batches":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, _, err := DecodeSnapshot(b)
		if err != nil {
			return
		}
		for _, a := range st.Active() {
			if e := st.entries[a.ID]; len(e.batches) > CachedBatches {
				t.Fatalf("producer %d keeps %d batches", a.ID, len(e.batches))
			}
		}
	})
}
