package share

import (
	"bytes"
	"testing"
)

// TestJoinBatches: a continuation read into the spare capacity right
// behind the first read's batches joins them without a copy; one read
// anywhere else is copied after them; either way the bytes are the two
// reads' in order.
func TestJoinBatches(t *testing.T) {
	t.Parallel()
	buf := make([]byte, 0, 16)
	a := append(buf, "abcd"...)
	b := append(a[len(a):], "efg"...) // read into a's spare capacity
	j := joinBatches(a, b)
	if string(j) != "abcdefg" || &j[0] != &buf[:1][0] {
		t.Fatalf("behind a: got %q (aliasing the buffer: %v), want abcdefg in place", j, &j[0] == &buf[:1][0])
	}
	other := []byte("xyz")
	j = joinBatches(a, other)
	if string(j) != "abcdxyz" {
		t.Fatalf("elsewhere: got %q, want abcdxyz", j)
	}
	if other[0] = 'Q'; bytes.Contains(j, []byte("Q")) {
		t.Fatal("a joined copy aliases its second read")
	}
	if j = joinBatches(a, nil); string(j) != "abcd" {
		t.Fatalf("nothing more: got %q", j)
	}
	if j = joinBatches(nil, other); string(j) != "Qyz" {
		t.Fatalf("nothing first: got %q", j)
	}
}

// TestReadBufPool: only buffers of the pool's size go back into it, so a
// read that had to allocate a larger one does not pin it.
func TestReadBufPool(t *testing.T) {
	b := getReadBuf()
	if cap(b) != readBufSize || len(b) != 0 {
		t.Fatalf("got len %d cap %d, want 0 and %d", len(b), cap(b), readBufSize)
	}
	putReadBuf(b[:10])
	putReadBuf(make([]byte, 0, 2*readBufSize)) // dropped
	g := Grant{buf: getReadBuf(), Batches: []byte("x")}
	g.Release()
	if g.buf != nil || g.Batches != nil {
		t.Fatal("a released grant still holds its buffer")
	}
	g.Release() // twice is harmless
}
