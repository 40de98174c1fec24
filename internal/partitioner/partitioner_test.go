package partitioner

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMurmur2KafkaVectors pins the values of Kafka's own UtilsTest.testMurmur2.
func TestMurmur2KafkaVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []byte
		want int32
	}{
		{[]byte("21"), -973932308},
		{[]byte("foobar"), -790332482},
		{[]byte("a-little-bit-long-string"), -985981536},
		{[]byte("a-little-bit-longer-string"), -1486304829},
		{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971},
		{[]byte{'a', 'b', 'c'}, 479470107},
	}
	for _, tt := range tests {
		if got := Murmur2(tt.in); got != tt.want {
			t.Errorf("Murmur2(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestForKeyToPositiveNotAbs pins that a negative hash is masked, not negated.
func TestForKeyToPositiveNotAbs(t *testing.T) {
	t.Parallel()
	key := []byte("21") // murmur2 = -973932308
	h := int64(-973932308)
	masked := int((h & 0x7fffffff) % 7)
	abs := int((-h) % 7)
	if masked == abs {
		t.Fatalf("test vector does not tell mask from abs")
	}
	if got := ForKey(key, 7); got != masked {
		t.Fatalf("ForKey(%q, 7) = %d, want %d (toPositive), abs would give %d", key, got, masked, abs)
	}
}

func TestForKeyRange(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 10; n++ {
		for i := range 1000 {
			key := fmt.Appendf(nil, "key-%d", i)
			if p := ForKey(key, n); p < 0 || p >= n {
				t.Fatalf("ForKey(%q, %d) = %d, out of range", key, n, p)
			}
		}
	}
	if got := ForKey(nil, 3); got != ForKey([]byte{}, 3) {
		t.Fatalf("nil and empty key differ: %d", got)
	}
}

func TestForKeyPanicsOnNoPartitions(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("ForKey(key, 0) did not panic")
		}
	}()
	ForKey([]byte("k"), 0)
}

// TestForKeyMatchesFranzGo cross-checks 10,000 random keys against franz-go's
// Kafka-compatible key partitioner (StickyKeyPartitioner(nil) hashes non-nil
// keys with murmur2 exactly as the Java client).
func TestForKeyMatchesFranzGo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 10000)
	for i := range keys {
		k := make([]byte, rng.IntN(64)) // includes empty keys and every tail length
		for j := range k {
			k[j] = byte(rng.Uint32())
		}
		keys[i] = k
	}
	tp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for n := 1; n <= 64; n++ {
		for _, k := range keys {
			want := tp.Partition(&kgo.Record{Key: k}, n)
			if got := ForKey(k, n); got != want {
				t.Fatalf("ForKey(%x, %d) = %d, franz-go says %d", k, n, got, want)
			}
		}
	}
}

func BenchmarkForKey(b *testing.B) {
	for _, size := range []int{8, 36, 256} {
		key := make([]byte, size)
		for i := range key {
			key[i] = byte(i * 7)
		}
		b.Run(fmt.Sprintf("key=%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				ForKey(key, 48)
			}
		})
	}
}
