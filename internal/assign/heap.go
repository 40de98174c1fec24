package assign

// memberHeap is a binary heap of member indices under a caller-supplied
// order, with positions tracked so a member whose count changed can be fixed
// in place. container/heap would need the same bookkeeping behind an
// interface; this is smaller and allocation-free once built.
type memberHeap struct {
	items []int32
	pos   []int32 // member → index in items, or -1
	less  func(a, b int32) bool
}

func newMemberHeap(members int, less func(a, b int32) bool) *memberHeap {
	h := &memberHeap{pos: make([]int32, members), less: less}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func (h *memberHeap) len() int         { return len(h.items) }
func (h *memberHeap) top() int32       { return h.items[0] }
func (h *memberHeap) has(m int32) bool { return h.pos[m] >= 0 }

func (h *memberHeap) push(m int32) {
	h.pos[m] = int32(len(h.items))
	h.items = append(h.items, m)
	h.up(len(h.items) - 1)
}

// pop removes the top member.
func (h *memberHeap) pop() {
	last := len(h.items) - 1
	h.swap(0, last)
	h.pos[h.items[last]] = -1
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
}

// clear empties the heap, keeping its storage.
func (h *memberHeap) clear() {
	for _, m := range h.items {
		h.pos[m] = -1
	}
	h.items = h.items[:0]
}

// fix restores the heap order after m's key changed.
func (h *memberHeap) fix(m int32) {
	i := int(h.pos[m])
	if !h.down(i) {
		h.up(i)
	}
}

func (h *memberHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = int32(i)
	h.pos[h.items[j]] = int32(j)
}

func (h *memberHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i], h.items[parent]) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts i towards the leaves and reports whether it moved.
func (h *memberHeap) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if r := child + 1; r < n && h.less(h.items[r], h.items[child]) {
			child = r
		}
		if !h.less(h.items[child], h.items[i]) {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}
