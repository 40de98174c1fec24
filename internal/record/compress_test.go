package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
)

func textPayload(n int) []byte {
	var b []byte
	for i := 0; len(b) < n; i++ {
		b = fmt.Appendf(b, "line %d: the quick brown fox %d jumps over the lazy dog\n", i, i*i%977)
	}
	return b[:n]
}

func TestCompressRoundTrip(t *testing.T) {
	t.Parallel()
	inputs := map[string][]byte{
		"empty": {},
		"byte":  {42},
		"text":  textPayload(100 << 10),
		"large": textPayload(3 << 20), // several LZ4 blocks and xerial-sized chunks
	}
	for _, c := range allCodecs {
		for name, in := range inputs {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				t.Parallel()
				z, err := Compress(c, in)
				if err != nil {
					t.Fatalf("Compress: %v", err)
				}
				out, err := Decompress(c, z)
				if err != nil {
					t.Fatalf("Decompress: %v", err)
				}
				if !bytes.Equal(out, in) {
					t.Fatalf("round trip changed %d bytes into %d", len(in), len(out))
				}
				if c != CodecNone && len(in) > 1000 && len(z) > len(in)/2 {
					t.Errorf("%d bytes compressed only to %d", len(in), len(z))
				}
			})
		}
	}
}

// xerialFrame builds a snappy-java stream by hand: the magic, the version
// words, then each chunk as a 4-byte length and a raw snappy block.
func xerialFrame(chunks ...[]byte) []byte {
	b := []byte("\x82SNAPPY\x00")
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 1)
	for _, c := range chunks {
		block := s2.EncodeSnappy(nil, c)
		b = binary.BigEndian.AppendUint32(b, uint32(len(block)))
		b = append(b, block...)
	}
	return b
}

func TestSnappyXerial(t *testing.T) {
	t.Parallel()
	text := textPayload(200 << 10)
	tests := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"hand-built, three blocks", xerialFrame(text[:1000], text[1000:70000], text[70000:]), text},
		{"hand-built, no blocks", xerialFrame(), []byte{}},
		{"klauspost xerial.Encode", xerial.Encode(nil, text), text},
	}
	for _, tt := range tests {
		out, err := Decompress(CodecSnappy, tt.in)
		if err != nil || !bytes.Equal(out, tt.want) {
			t.Errorf("%s: %d bytes, err %v", tt.name, len(out), err)
		}
	}

	// A whole batch whose records are xerial-framed, as a Java producer sends.
	records := sampleRecords(0, 20, 300, 11)
	plain := mustEncode(t, 0, records, DefaultBatchOptions())
	raw := corrupt(plain, func(b []byte) []byte {
		out := append(bytes.Clone(b[:HeaderSize]), xerialFrame(b[HeaderSize:HeaderSize+100], b[HeaderSize+100:])...)
		out[posAttributes+1] |= byte(CodecSnappy)
		return out
	})
	b, err := Decode(raw)
	if err != nil {
		t.Fatalf("Decode xerial batch: %v", err)
	}
	if !reflect.DeepEqual(b.Records, records) {
		t.Fatal("records differ")
	}
}

func TestDecompressRejects(t *testing.T) {
	t.Parallel()
	text := textPayload(10 << 10)
	good := map[Codec][]byte{}
	for _, c := range allCodecs {
		z, err := Compress(c, text)
		if err != nil {
			t.Fatal(err)
		}
		good[c] = z
	}
	x := xerialFrame(text)
	tests := []struct {
		name string
		c    Codec
		in   []byte
		want error
	}{
		{"unknown codec", 6, text, ErrCodec},
		{"gzip empty", CodecGzip, nil, ErrCorrupt},
		{"gzip cut", CodecGzip, good[CodecGzip][:len(good[CodecGzip])-5], ErrCorrupt},
		{"gzip bad crc", CodecGzip, flip(good[CodecGzip], len(good[CodecGzip])-6), ErrCorrupt},
		{"snappy empty", CodecSnappy, nil, ErrCorrupt},
		{"snappy cut", CodecSnappy, good[CodecSnappy][:len(good[CodecSnappy])/2], ErrCorrupt},
		{"snappy length lies", CodecSnappy, append([]byte{0xff, 0xff, 0x03}, good[CodecSnappy][2:]...), ErrCorrupt},
		{"xerial header cut", CodecSnappy, x[:12], ErrCorrupt},
		{"xerial length cut", CodecSnappy, append(xerialFrame(), 0, 0), ErrCorrupt},
		{"xerial block past end", CodecSnappy, x[:len(x)-1], ErrCorrupt},
		{"lz4 empty", CodecLZ4, nil, ErrCorrupt},
		{"lz4 cut", CodecLZ4, good[CodecLZ4][:len(good[CodecLZ4])/2], ErrCorrupt},
		{"lz4 bad magic", CodecLZ4, flip(good[CodecLZ4], 0), ErrCorrupt},
		{"zstd empty", CodecZstd, nil, ErrCorrupt},
		{"zstd cut", CodecZstd, good[CodecZstd][:len(good[CodecZstd])/2], ErrCorrupt},
		{"zstd bad magic", CodecZstd, flip(good[CodecZstd], 0), ErrCorrupt},
	}
	for _, tt := range tests {
		if out, err := Decompress(tt.c, tt.in); !errors.Is(err, tt.want) || out != nil {
			t.Errorf("%s: %d bytes, err %v, want %v", tt.name, len(out), err, tt.want)
		}
	}
}

func flip(b []byte, pos int) []byte {
	b = bytes.Clone(b)
	b[pos] ^= 0xff
	return b
}

// TestDecompressBomb checks that output is cut at the limit whatever the
// stream claims: 8 MiB of zeros compresses to a few KiB.
func TestDecompressBomb(t *testing.T) {
	t.Parallel()
	zeros := make([]byte, 8<<20)
	for _, c := range allCodecs {
		z, err := Compress(c, zeros)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecompressLimit(c, z, 1<<20); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v: err %v, want ErrTooLarge", c, err)
		}
		if out, err := DecompressLimit(c, z, len(zeros)); err != nil || len(out) != len(zeros) {
			t.Errorf("%v: limit equal to the size: %d bytes, %v", c, len(out), err)
		}
	}
	// A xerial stream of many small blocks stops at the limit too.
	blocks := make([][]byte, 40)
	for i := range blocks {
		blocks[i] = zeros[:64<<10]
	}
	if _, err := DecompressLimit(CodecSnappy, xerialFrame(blocks...), 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("xerial: err %v, want ErrTooLarge", err)
	}
}

// TestCodecsConcurrent exercises the shared and pooled codec state from many
// goroutines (run with -race).
func TestCodecsConcurrent(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				c := allCodecs[(g+i)%len(allCodecs)]
				in := textPayload(1000 + 997*g + i)
				z, err := Compress(c, in)
				if err != nil {
					errs <- err
					return
				}
				out, err := Decompress(c, z)
				if err != nil || !bytes.Equal(out, in) {
					errs <- fmt.Errorf("%v: %d bytes back of %d: %v", c, len(out), len(in), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDecompressInto: decompressing into a recycled buffer gives what
// Decompress gives, reuses the buffer when it is large enough, and grows
// past it when not.
func TestDecompressInto(t *testing.T) {
	t.Parallel()
	src := bytes.Repeat([]byte("strand decompress into "), 500)
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		comp, err := Compress(c, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, buf := range [][]byte{nil, {}, make([]byte, 0, 16), make([]byte, 0, 64<<10)} {
			out, err := DecompressInto(buf, c, comp)
			if err != nil || !bytes.Equal(out, src) {
				t.Fatalf("%v into cap %d: %v, equal %v", c, cap(buf), err, bytes.Equal(out, src))
			}
			if c != CodecNone && cap(buf) >= 64<<10 && &out[0] != &buf[:1][0] {
				t.Errorf("%v: a large enough buffer was not reused", c)
			}
		}
	}
}
