package kafka

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"testing/iotest"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/partlog"
)

// allocBudget is what decoding a request of n bytes may allocate: kmsg sizes
// every array by the bytes remaining, times a bounded per-element overhead
// (Go structs are larger than their wire form), plus fixed costs.
func allocBudget(n int) uint64 { return uint64(96*n) + 64<<10 }

// seedFrames returns a valid frame (without size prefix) for every served
// key at its oldest and newest version.
func seedFrames() [][]byte {
	var out [][]byte
	for key, a := range apis {
		for _, v := range []int16{a.min, a.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 1)
			out = append(out, b[4:])
		}
	}
	return out
}

// FuzzRequest feeds arbitrary frames through the server's parse path. It
// must never panic, and what it allocates must be bounded by the input's
// size, however large the counts and lengths the input claims.
func FuzzRequest(f *testing.F) {
	for _, b := range seedFrames() {
		f.Add(b)
	}
	// A Produce v9 header followed by a huge topic count.
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	// A Fetch v4 request whose topic array claims 2^31-1 entries.
	f.Add(append([]byte{0, 1, 0, 4, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0x7f, 0xff, 0xff, 0xff))
	f.Fuzz(func(t *testing.T, frame []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := parseRequest(frame)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > allocBudget(len(frame)) {
			t.Fatalf("decoding %d bytes allocated %d bytes (budget %d)", len(frame), got, allocBudget(len(frame)))
		}
		if err == nil && r.kreq == nil && !r.unsupportedApiVersions {
			t.Fatal("no error and no request")
		}
		if err == nil && r.kreq != nil {
			// What decodes must re-encode without panicking.
			_ = r.kreq.AppendTo(nil)
		}
		// The same bytes through the frame reader, in two halves.
		sized := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		sized = append(sized, frame...)
		half := len(sized) / 2
		got, err := readFrame(io.MultiReader(bytes.NewReader(sized[:half]), bytes.NewReader(sized[half:])), DefaultMaxRequestBytes, new(framePool))
		if err == nil && !bytes.Equal(got, frame) {
			t.Fatal("readFrame changed the frame")
		}
	})
}

func TestSeedFramesParse(t *testing.T) {
	for _, b := range seedFrames() {
		r, err := parseRequest(b)
		if err != nil {
			t.Fatalf("seed %x: %v", b[:4], err)
		}
		if r.kreq == nil {
			t.Fatalf("seed %x: no request", b[:4])
		}
	}
}

// TestReadFrameAllocatesAsBytesArrive: a frame that claims 90 MiB but sends
// a few KiB costs a few KiB, not 90 MiB. (Not parallel: it reads the
// process's allocation counter.)
func TestReadFrameAllocatesAsBytesArrive(t *testing.T) {
	claim := binary.BigEndian.AppendUint32(nil, 90<<20)
	input := io.MultiReader(bytes.NewReader(claim), bytes.NewReader(make([]byte, 5000)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(input, DefaultMaxRequestBytes, new(framePool))
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a frame cut short must fail")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("reading 5000 bytes of a frame claiming 90 MiB allocated %d bytes", got)
	}
	if _, err := readFrame(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 200<<20)), DefaultMaxRequestBytes, new(framePool)); err == nil {
		t.Fatal("a frame above socket.request.max.bytes must be refused")
	}
}

// TestReadFrameCoveredByBudgetAllocatesOnce: a large frame whose bytes
// queued.max.request.bytes reserved whole is read into one buffer of its
// size class, not grown fourfold from readChunk (which allocates 256 KiB +
// 1 MiB + 4 MiB for this 3 MiB frame and copies 1.25 MiB again). Not
// parallel: it reads the process's allocation counter.
func TestReadFrameCoveredByBudgetAllocatesOnce(t *testing.T) {
	const size = 3 << 20
	body := bytes.Repeat([]byte("strand"), size/6+1)[:size]
	input := append(binary.BigEndian.AppendUint32(nil, size), body...)
	reserved := 0
	covered := func(n int) (int64, bool) { reserved = n; return int64(n), true }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	frame, err := readFrameMin(bytes.NewReader(input), minFrameSize, DefaultMaxRequestBytes, new(framePool), covered)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(frame, body) || reserved != size {
		t.Fatalf("read %d bytes (err %v, reserved %d), want the %d-byte frame", len(frame), err, reserved, size)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20+64<<10 {
		t.Fatalf("reading a %d-byte frame the budget covers allocated %d bytes, want one 4 MiB buffer", size, got)
	}
}

// TestEncodeFetchSplicesExactly: the spliced fetch response is byte for byte
// kmsg's own encoding, in every served version, with record sets spliced
// from memory and sent from file spans (over a pipe, so writeSpan's copy
// path; TestFetchSendfile drives sendfile).
func TestEncodeFetchSplicesExactly(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	file, err := os.Create(filepath.Join(t.TempDir(), "segment"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var filePos int64
	for v := apis[1].min; v <= apis[1].max; v++ {
		for round := range 20 {
			resp := kmsg.NewPtrFetchResponse() // with the record sets
			resp.SetVersion(v)
			var spans []partlog.Span
			withSpans := kmsg.NewPtrFetchResponse() // with span markers for some
			withSpans.SetVersion(v)
			for ti := range rng.IntN(3) + 1 {
				st := kmsg.NewFetchResponseTopic()
				st.Topic = "topic-" + strconv.Itoa(ti)
				st.TopicID[0] = byte(ti + 1)
				sst := st // Partitions still nil: the two grow apart
				for pi := range rng.IntN(4) + 1 {
					sp := kmsg.NewFetchResponseTopicPartition()
					sp.Partition, sp.HighWatermark = int32(pi), rng.Int64N(1<<40)
					size := []int{0, 10, spliceMin - 1, spliceMin, 70_000, 300}[rng.IntN(6)]
					sp.RecordBatches = make([]byte, size)
					for i := range sp.RecordBatches {
						sp.RecordBatches[i] = byte(rng.Uint32())
					}
					st.Partitions = append(st.Partitions, sp)
					if size > 0 && rng.IntN(2) == 0 {
						pos := filePos + rng.Int64N(100) // spans never overlap
						filePos = pos + int64(size)
						if _, err := file.WriteAt(sp.RecordBatches, pos); err != nil {
							t.Fatal(err)
						}
						spans = append(spans, partlog.Span{File: file, Pos: pos, Len: size})
						sp.RecordBatches = spanMarker(len(spans) - 1)
					}
					sst.Partitions = append(sst.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
				withSpans.Topics = append(withSpans.Topics, sst)
			}
			want := appendResponse(nil, int32(round), resp)
			before := appendResponse(nil, int32(round), withSpans)
			var got bytes.Buffer
			if err := encodeFetch(int32(round), withSpans, spans).writeTo(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("v%d round %d: spliced encoding differs from kmsg's (%d vs %d bytes)", v, round, got.Len(), len(want))
			}
			if again := appendResponse(nil, int32(round), withSpans); !bytes.Equal(again, before) {
				t.Fatalf("v%d: encodeFetch did not restore the response", v)
			}
		}
	}
}

// TestEncodeShareFetchSplicesExactly: a ShareFetch response's record sets
// spliced in by the writer (encodeResponse of a shareFetchResponse) give
// the bytes kmsg's own encoding gives, at every version, with records of
// every size around spliceMin beside their AcquiredRecords; the response is
// left as it was, and writing it gives its grants' buffers back.
func TestEncodeShareFetchSplicesExactly(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for v := apis[apiKeyShareFetch].min; v <= apis[apiKeyShareFetch].max; v++ {
		for round := range 20 {
			resp := kmsg.NewPtrShareFetchResponse()
			resp.SetVersion(v)
			resp.AcquisitionLockTimeoutMillis = 30_000
			for ti := range rng.IntN(3) + 1 {
				st := kmsg.NewShareFetchResponseTopic()
				st.TopicID[0] = byte(ti + 1)
				for pi := range rng.IntN(4) + 1 {
					sp := kmsg.NewShareFetchResponseTopicPartition()
					sp.Partition = int32(pi)
					size := []int{0, 10, spliceMin - 1, spliceMin, 70_000, 300}[rng.IntN(6)]
					sp.Records = make([]byte, size)
					for i := range sp.Records {
						sp.Records[i] = byte(rng.Uint32())
					}
					ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
					ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = rng.Int64N(1000), 1000+rng.Int64N(1000), int16(rng.IntN(5)+1)
					sp.AcquiredRecords = append(sp.AcquiredRecords, ar)
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			want := appendResponse(nil, int32(round), resp)
			out := encodeResponse(int32(round), &shareFetchResponse{ShareFetchResponse: resp})
			if out.recycle == nil {
				t.Fatal("a share fetch response is not recycled once written")
			}
			large := 0
			for _, set := range recordSets(resp) {
				if len(*set) >= spliceMin {
					large++
				}
			}
			if len(out.bufs) != 1+3*large+1 && !(large == 0 && len(out.bufs) == 1) {
				t.Fatalf("v%d round %d: %d record sets of at least %d bytes, written as %d buffers: not spliced", v, round, large, spliceMin, len(out.bufs))
			}
			var got bytes.Buffer
			if err := out.writeTo(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("v%d round %d: spliced encoding differs from kmsg's (%d vs %d bytes)", v, round, got.Len(), len(want))
			}
			if again := appendResponse(nil, int32(round), resp); !bytes.Equal(again, want) {
				t.Fatalf("v%d: encodeResponse did not restore the response", v)
			}
		}
	}
}

// TestReadFrameEverySize: frames around the pool's class and growth
// boundaries, delivered a few bytes at a time into a shared pool, come back
// whole and unchanged; buffers are returned and reused between reads.
func TestReadFrameEverySize(t *testing.T) {
	t.Parallel()
	var pool framePool
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{minFrameSize, 4095, 4096, 4097, readChunk - 1, readChunk, readChunk + 1, 4*readChunk + 3, 3 << 20} {
		frame := make([]byte, n)
		for i := range frame {
			frame[i] = byte(rng.Uint32())
		}
		in := iotest.HalfReader(bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, uint32(n)), frame...)))
		got, err := readFrame(in, DefaultMaxRequestBytes, &pool)
		if err != nil {
			t.Fatalf("%d-byte frame: %v", n, err)
		}
		if !bytes.Equal(got, frame) {
			t.Fatalf("%d-byte frame changed", n)
		}
		if c := frameClass(n); c >= 0 && cap(got) != 1<<(c+minFrameClass) {
			t.Fatalf("%d-byte frame in a buffer of capacity %d, not its class", n, cap(got))
		}
		pool.put(got)
	}
}
