package record

import "fmt"

// Scanner walks the batches of a byte string holding batches back to back, as
// a segment file or a fetch response does. It checks each batch's frame (magic
// and length) but not its CRC or records: call Check or Decode on Batch() for
// that, so that a fetch path can frame without paying for a checksum.
//
//	s := record.Batches(b)
//	for s.Next() {
//		h, raw := s.Header(), s.Batch()
//		…
//	}
//	if err := s.Err(); err != nil { // the tail from s.Pos() is partial or bad
//		…
//	}
type Scanner struct {
	b     []byte
	pos   int // start of the current batch
	h     Header
	batch []byte
	err   error
}

// Batches returns a Scanner over the batches in b.
func Batches(b []byte) *Scanner { return &Scanner{b: b} }

// Next advances to the next batch and reports whether there is one. It
// returns false at the end of the input, or at a batch that is cut short
// (Err wraps ErrShortBatch: at the tail of a log, a torn write) or has a bad
// frame (ErrBadMagic, ErrBadLength).
func (s *Scanner) Next() bool {
	if s.err != nil {
		return false
	}
	if s.batch != nil {
		s.pos += len(s.batch)
		s.batch = nil
	}
	rest := s.b[s.pos:]
	if len(rest) == 0 {
		return false
	}
	h, err := ParseHeader(rest)
	if err != nil {
		s.err = fmt.Errorf("%w (at byte %d)", err, s.pos)
		return false
	}
	if len(rest) < h.Size() {
		s.err = fmt.Errorf("%w: have %d of %d bytes (at byte %d)", ErrShortBatch, len(rest), h.Size(), s.pos)
		return false
	}
	s.h = h
	s.batch = rest[:h.Size():h.Size()]
	return true
}

// Header returns the header of the current batch.
func (s *Scanner) Header() Header { return s.h }

// Batch returns the bytes of the current batch, aliasing the input.
func (s *Scanner) Batch() []byte { return s.batch }

// Pos returns the byte position of the current batch in the input; once Next
// has returned false, the position where scanning stopped: the length of the
// input at a clean end, else the start of the partial or bad batch (where a
// recovering log would truncate).
func (s *Scanner) Pos() int { return s.pos }

// Err returns why scanning stopped early, or nil if it reached the end of the
// input cleanly.
func (s *Scanner) Err() error { return s.err }
