package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedSize bounds the output of any decompression: the records of
// one batch may not expand beyond it. A limit given to DecompressLimit or
// DecodeLimit may lower it, never raise it.
//
// Kafka itself has no such bound; 256 MiB is far above any sane batch
// (message.max.bytes defaults to 1 MiB compressed) and small enough that a
// hostile batch cannot exhaust the broker's memory.
const MaxDecompressedSize = 256 << 20

// Compress returns src compressed with codec c, in the form a Kafka v2 batch
// carries its records: a gzip stream, a raw snappy block, an LZ4 frame or a
// zstd frame. For CodecNone it returns a copy of src.
func Compress(c Codec, src []byte) ([]byte, error) {
	return appendCompressed(nil, c, src)
}

// appendCompressed appends src compressed with c to dst.
func appendCompressed(dst []byte, c Codec, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		w := gzipWriters.Get().(*gzip.Writer)
		out := &appendWriter{b: dst}
		w.Reset(out)
		_, err := w.Write(src)
		if err == nil {
			err = w.Close()
		}
		gzipWriters.Put(w)
		if err != nil {
			return dst, fmt.Errorf("record: gzip compress: %w", err)
		}
		return out.b, nil
	case CodecSnappy:
		// Raw block format: every Kafka client reads it, and it saves the
		// 16-byte xerial header and the per-block lengths.
		n := s2.MaxEncodedLen(len(src))
		if n < 0 {
			return dst, fmt.Errorf("%w: %d bytes is too large for snappy", ErrTooLarge, len(src))
		}
		dst = slices.Grow(dst, n)
		enc := s2.EncodeSnappy(dst[len(dst):len(dst)+n], src)
		return dst[:len(dst)+len(enc)], nil
	case CodecLZ4:
		w := lz4Writers.Get().(*lz4.Writer)
		out := &appendWriter{b: dst}
		w.Reset(out)
		_, err := w.Write(src)
		if err == nil {
			err = w.Close()
		}
		w.Reset(nil) // drop the reference to out
		lz4Writers.Put(w)
		if err != nil {
			return dst, fmt.Errorf("record: lz4 compress: %w", err)
		}
		return out.b, nil
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: %d", ErrCodec, int8(c))
}

// Decompress returns src decompressed with codec c, at most
// MaxDecompressedSize bytes. For CodecNone it returns src itself. Snappy input
// may be a raw block or xerial-framed. Corrupt input yields an error wrapping
// ErrCorrupt; output over the limit, ErrTooLarge; an unknown codec, ErrCodec.
func Decompress(c Codec, src []byte) ([]byte, error) {
	return DecompressLimit(c, src, MaxDecompressedSize)
}

// DecompressLimit is Decompress with a lower bound on the output size; a limit
// ≤ 0 or above MaxDecompressedSize means MaxDecompressedSize.
//
// For zstd frames that do not declare their content size, the decoder's
// memory is bounded by MaxDecompressedSize and the smaller limit is checked on
// the result.
func DecompressLimit(c Codec, src []byte, limit int) (out []byte, err error) {
	return decompress(nil, c, src, limit)
}

// DecompressInto is Decompress writing into buf's storage when it is large
// enough (the result then aliases buf; for CodecNone it is src itself), so
// that a caller can recycle one buffer across batches.
func DecompressInto(buf []byte, c Codec, src []byte) ([]byte, error) {
	return decompress(buf[:0], c, src, MaxDecompressedSize)
}

// decompress decompresses into buf's storage (buf is empty; nil: allocate).
func decompress(buf []byte, c Codec, src []byte, limit int) (out []byte, err error) {
	if limit <= 0 || limit > MaxDecompressedSize {
		limit = MaxDecompressedSize
	}
	// The codecs are third-party code fed hostile bytes. Fuzzing finds no
	// panic, but one would take the broker down, so turn any into an error.
	// A reader that panicked is not returned to its pool (the Put calls are
	// not deferred).
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v decoder panicked: %v", ErrCorrupt, c, r)
		}
	}()
	switch c {
	case CodecNone:
		if len(src) > limit {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(src), limit)
		}
		return src, nil
	case CodecGzip:
		return gunzip(buf, src, limit)
	case CodecSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			return unsnappyXerial(buf, src, limit)
		}
		return unsnappyBlock(buf, src, limit)
	case CodecLZ4:
		if len(src) == 0 {
			// The lz4 reader takes no input as an empty stream; it is not a frame.
			return nil, fmt.Errorf("%w: lz4: no frame", ErrCorrupt)
		}
		r := lz4Readers.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		out, err := readAllLimit(buf, r, len(src), limit)
		r.Reset(nil)
		if err != nil {
			return nil, streamErr(c, err)
		}
		lz4Readers.Put(r)
		return out, nil
	case CodecZstd:
		return unzstd(buf, src, limit)
	}
	return nil, fmt.Errorf("%w: %d", ErrCodec, int8(c))
}

func gunzip(buf, src []byte, limit int) ([]byte, error) {
	r := gzipReaders.Get().(*gzip.Reader)
	if err := r.Reset(bytes.NewReader(src)); err != nil {
		gzipReaders.Put(r)
		return nil, streamErr(CodecGzip, err)
	}
	out, err := readAllLimit(buf, r, len(src), limit)
	if err != nil {
		return nil, streamErr(CodecGzip, err)
	}
	gzipReaders.Put(r)
	return out, nil
}

// xerialMagic opens a snappy payload in the xerial (snappy-java) framing. It is
// followed by two 4-byte version words, then by blocks, each a 4-byte
// big-endian length and a raw snappy block of that length.
var xerialMagic = []byte("\x82SNAPPY\x00")

const xerialHeaderSize = 16 // magic + version + minimum compatible version

func unsnappyXerial(buf, src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderSize {
		return nil, fmt.Errorf("%w: snappy: xerial header cut at %d bytes", ErrCorrupt, len(src))
	}
	p := src[xerialHeaderSize:]
	out := buf
	for len(p) > 0 {
		if len(p) < 4 {
			return nil, fmt.Errorf("%w: snappy: xerial block length cut at %d bytes", ErrCorrupt, len(p))
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return nil, fmt.Errorf("%w: snappy: xerial block of %d bytes with %d left", ErrCorrupt, n, len(p))
		}
		var err error
		out, err = unsnappyBlock(out, p[:n], limit)
		if err != nil {
			return nil, err
		}
		p = p[n:]
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// unsnappyBlock appends the decoding of one raw snappy block to dst, keeping
// the total within limit.
func unsnappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	if n > limit-len(dst) {
		return nil, fmt.Errorf("%w: snappy block of %d bytes after %d, limit %d", ErrTooLarge, n, len(dst), limit)
	}
	// DecodeStrict, not Decode: Decode also accepts S2 extensions that Java's
	// snappy and librdkafka reject, and the broker serves stored batches to
	// those clients as they are.
	dst = slices.Grow(dst, n)
	dec, err := snappy.DecodeStrict(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	if len(dec) != n {
		return nil, fmt.Errorf("%w: snappy: block decoded to %d bytes, header says %d", ErrCorrupt, len(dec), n)
	}
	return dst[:len(dst)+n], nil
}

func unzstd(buf, src []byte, limit int) ([]byte, error) {
	// A frame that declares its size is checked before any decoding.
	var fh zstd.Header
	if err := fh.Decode(src); err != nil {
		return nil, fmt.Errorf("%w: zstd: %w", ErrCorrupt, err)
	}
	if fh.HasFCS && fh.FrameContentSize > uint64(limit) {
		return nil, fmt.Errorf("%w: zstd frame declares %d bytes, limit %d", ErrTooLarge, fh.FrameContentSize, limit)
	}
	// No preallocation from the declared size: it is only a claim. DecodeAll
	// itself caps its first allocation by what the input can expand to.
	out, err := zstdDecoder().DecodeAll(src, buf)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded):
		return nil, fmt.Errorf("%w: zstd: %w", ErrTooLarge, err)
	case err != nil:
		return nil, fmt.Errorf("%w: zstd: %w", ErrCorrupt, err)
	case len(out) > limit:
		return nil, fmt.Errorf("%w: zstd output of %d bytes, limit %d", ErrTooLarge, len(out), limit)
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// readAllLimit reads r to its end, failing with ErrTooLarge once more than
// limit bytes come out. It starts from a guess based on the input size rather
// than on anything the stream claims.
//
// It reads into buf's storage (buf is empty) when it has any.
func readAllLimit(buf []byte, r io.Reader, inputSize, limit int) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, min(max(4*inputSize, 512), limit+1))
	}
	for empty := 0; ; {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, fmt.Errorf("%w: output over %d bytes", ErrTooLarge, limit)
			}
			// Grow by doubling, to at most one byte over the limit: reading
			// that byte proves the output too large.
			buf = slices.Grow(buf, min(cap(buf), limit+1-len(buf)))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, fmt.Errorf("%w: output over %d bytes", ErrTooLarge, limit)
		}
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, err
		case n == 0:
			if empty++; empty > 100 {
				return nil, io.ErrNoProgress
			}
		default:
			empty = 0
		}
	}
}

// streamErr classifies an error of a streaming decoder: over the limit, or
// corrupt input. (The gzip and lz4 packages name themselves in their errors.)
func streamErr(c Codec, err error) error {
	if errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("%w (%v)", err, c)
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// appendWriter is an io.Writer appending to a byte slice, so that streaming
// compressors can write straight into a batch being built.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Codec state pools. Readers and writers are reset before each use, so a
// pooled value carries no data from one batch to the next.
var (
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		return w
	}}
	gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

	// Kafka's Java producer writes LZ4 frames of independent 64 KiB blocks;
	// a smaller block also keeps each pooled writer's buffer small (the
	// default is 4 MiB).
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1))
		return w
	}}
	lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
)

// The zstd encoder and decoder are built once and shared: EncodeAll and
// DecodeAll are safe for concurrent use, each keeping its own internal pool of
// GOMAXPROCS block coders. They start no goroutines as long as only the *All
// methods are used.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			// An empty input still makes a frame: zero bytes is not a
			// valid zstd payload for other clients' decoders.
			zstd.WithZeroFrames(true),
		)
		if err != nil {
			panic(fmt.Sprintf("record: zstd encoder options: %v", err))
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxDecompressedSize),
		)
		if err != nil {
			panic(fmt.Sprintf("record: zstd decoder options: %v", err))
		}
		return d
	})
)
