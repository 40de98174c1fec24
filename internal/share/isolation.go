package share

import (
	"slices"
	"sync"

	"github.com/strandmq/strand/internal/record"
)

// This file is share.isolation.level: which records of the log a
// share-partition may hand out at all. Control batches (transaction
// markers) are never handed out, whatever the level: they hold nothing for
// a consumer, and a client that ignored them would let their locks expire
// until they were dead-lettered. A read_committed group acquires only
// below the last stable offset and never hands out the records of an
// aborted transaction; it archives them as it passes them (as Kafka's
// SharePartition does with the aborted-transaction index), without a
// delivery and without a dead letter.

// The share.isolation.level values.
const (
	ReadUncommitted = "read_uncommitted"
	ReadCommitted   = "read_committed"
)

// AbortedTxn is an aborted transaction of one producer in a partition:
// its batches from First up to its abort marker at Last.
type AbortedTxn struct {
	ProducerID  int64
	First, Last Offset
}

// CommittedReader is the part of Host a read_committed share group needs;
// a Host without it serves every group read_uncommitted.
type CommittedReader interface {
	// ReadCommitted is ReadLog up to the last stable offset, with the
	// aborted transactions that overlap what it returned and the last
	// stable offset itself.
	ReadCommitted(buf []byte, tp TopicPartition, from Offset, maxBytes int) (LogRead, Offset, []AbortedTxn, error)
}

// Span is a run of offsets [First, Last].
type Span struct{ First, Last Offset }

// readMax bounds one acquisition's read of a partition's log (Kafka's
// max.partition.fetch.bytes default). A share fetch's MaxBytes is the
// client's whole-response budget — franz-go sends 50 MiB — while one
// acquisition hands out at most MaxRecords (500 by default): reading the
// budget would copy tens of megabytes per fetch to hand out half of one.
// The log read still returns at least one batch, however large.
const readMax = 1 << 20

// probeBytes is the first read of an acquisition: enough to learn the
// partition's bytes per offset, from which the read for want records is
// sized (a second read, when the first falls short).
const probeBytes = 64 << 10

// Acquisition reads use pooled buffers: a share fetch reads up to readMax
// of log per partition, and allocating (and zeroing) that afresh for every
// fetch, then collecting it, cost the broker more than serving the bytes
// (the handler gives the buffer back once the response is written:
// Grant.Release). A read larger than the buffer allocates its own.
var readBufs sync.Pool

const readBufSize = readMax + readMax/4 // a read of readMax plus a batch's edge

func getReadBuf() []byte {
	if v, ok := readBufs.Get().(*[]byte); ok {
		return (*v)[:0]
	}
	return make([]byte, 0, readBufSize)
}

func putReadBuf(b []byte) {
	if cap(b) == readBufSize {
		b = b[:0]
		readBufs.Put(&b)
	}
}

// readForAcquire reads tp's log from offset from for an acquisition of up
// to want records under the group's isolation level: the batches, the
// offset acquisition must stay below, and the offsets in it that must not
// be handed out (sorted). The batches are read into a pooled buffer,
// returned with them for the caller to give back (putReadBuf) once they
// are no longer used.
func (m *Manager) readForAcquire(tp TopicPartition, from Offset, want, maxBytes int, hw Offset, committed bool) (LogRead, Offset, []Span, []byte, error) {
	maxBytes = min(maxBytes, readMax)
	read := func(buf []byte, from Offset, n int) (LogRead, Offset, []AbortedTxn, error) {
		if cr, ok := m.host.(CommittedReader); ok && committed {
			return cr.ReadCommitted(buf, tp, from, n)
		}
		rd, err := m.host.ReadLog(buf, tp, from, n)
		return rd, hw, nil, err
	}
	buf := getReadBuf()
	rd, stable, aborted, err := read(buf, from, min(maxBytes, probeBytes))
	if err != nil {
		putReadBuf(buf)
		return LogRead{}, 0, nil, nil, err
	}
	if got := rd.Next - from; got > 0 && got < Offset(want) && len(rd.Batches) >= probeBytes/2 && rd.Next < min(hw, stable) {
		// Size the read for want offsets at the probe's density, with
		// a tenth more for the batches' edges, and read only what the
		// probe did not: the rest, from where it stopped, into the
		// buffer behind its batches.
		need := int(int64(len(rd.Batches)) * int64(want) / int64(got) * 11 / 10)
		if rest := min(maxBytes, need) - len(rd.Batches); rest > 0 {
			more, stable2, aborted2, err := read(rd.Batches[len(rd.Batches):], rd.Next, rest)
			if err != nil {
				putReadBuf(buf)
				return LogRead{}, 0, nil, nil, err
			}
			rd.Batches = joinBatches(rd.Batches, more.Batches)
			rd.Next = max(rd.Next, more.Next)
			stable, aborted = stable2, append(aborted, aborted2...)
		}
	}
	return rd, min(rd.Next, stable, hw), Undeliverable(rd.Batches, aborted), buf, nil
}

// joinBatches returns a's batches followed by b's: a itself grown over b
// when b was read into a's spare capacity right behind it (the usual
// case), else a copy of both.
func joinBatches(a, b []byte) []byte {
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return b
	case cap(a)-len(a) >= len(b) && &a[:len(a)+1][len(a)] == &b[0]:
		return a[:len(a)+len(b)]
	}
	return append(append(make([]byte, 0, len(a)+len(b)), a...), b...)
}

// Undeliverable returns the offsets of batches that no member may be
// handed: control batches, and the batches of the aborted transactions
// (nil for a read_uncommitted group). A producer's batch belongs to an
// aborted transaction when its base offset lies between the
// transaction's first offset and its abort marker.
func Undeliverable(batches []byte, aborted []AbortedTxn) []Span {
	var out []Span
	for s := record.Batches(batches); s.Next(); {
		h := s.Header()
		first, last := Offset(h.BaseOffset), Offset(h.LastOffset())
		skip := h.IsControl()
		if !skip && h.IsTransactional() {
			skip = slices.ContainsFunc(aborted, func(a AbortedTxn) bool {
				return a.ProducerID == h.ProducerID && a.First <= first && first <= a.Last
			})
		}
		if !skip {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Last+1 == first {
			out[n-1].Last = last
		} else {
			out = append(out, Span{First: first, Last: last})
		}
	}
	return out
}

// inSpans reports whether o is in one of spans (sorted, disjoint),
// starting the search at *i and leaving *i at the first span that does
// not end below o: offsets asked in increasing order cost one pass.
func inSpans(spans []Span, i *int, o Offset) bool {
	for *i < len(spans) && spans[*i].Last < o {
		*i++
	}
	return *i < len(spans) && spans[*i].First <= o
}
