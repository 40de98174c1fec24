package partlog

// WriteGate bounds how many appends copy their batch into the page cache at
// once, across every log that shares it (a broker shares one per data
// directory). On this project's 2-vCPU machine two threads in ext4's
// buffered-write path at once made every per-block step dearer (docs/
// BENCHMARKS.md, "One write(2) at a time"); with one at a time the same
// bytes cost less CPU and arrive no slower, as with kfake's single loop. The
// gate orders nothing and changes no durability rule: it is held around the
// write(2) alone, never across an fsync, an index update or a wait.
type WriteGate struct {
	slots chan struct{}
}

// NewWriteGate returns a gate that lets n appends write at once; n <= 0
// means no bound, and a nil gate.
func NewWriteGate(n int) *WriteGate {
	if n <= 0 {
		return nil
	}
	return &WriteGate{slots: make(chan struct{}, n)}
}

func (g *WriteGate) enter() {
	if g != nil {
		g.slots <- struct{}{}
	}
}

func (g *WriteGate) leave() {
	if g != nil {
		<-g.slots
	}
}
