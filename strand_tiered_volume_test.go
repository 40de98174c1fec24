package strand_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/tiered/storetest"
)

// Long runs behind environment variables (docs/TIERED.md, "Volume and
// performance"): STRAND_TIERED_VOLUME_MB=2048 is the issue's 2 GB test,
// STRAND_TIERED_PERF=1 measures throughput with tiering on and off.

// volumeValue is record i's value: size bytes whose first eight hold i,
// the rest a pattern of i, so that a reader can check every byte.
func volumeValue(i, size int) []byte {
	v := make([]byte, size)
	binary.BigEndian.PutUint64(v, uint64(i))
	for j := 8; j < size; j++ {
		v[j] = byte(i + j)
	}
	return v
}

// produceVolume writes n records of size bytes to topic, acks=all,
// uncompressed (the values are a pattern a compressor would shrink
// thirteenfold, and the disk and the store would then see a thirteenth
// of the bytes), and returns how long it took.
func produceVolume(t *testing.T, addr, topic string, from, n, size int) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(20000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := from; i < from+n; i++ {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Value: volumeValue(i, size)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	return time.Since(start)
}

// consumeVolume reads n records of topic from offset 0, checks each is
// at its offset with its exact value, and returns how long it took.
func consumeVolume(t *testing.T, addr, topic string, n, size int) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	start := time.Now()
	next := 0
	for next < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", next, n)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatal(errs)
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset != int64(next) || string(r.Value) != string(volumeValue(next, size)) {
				t.Fatalf("record at offset %d: want record %d byte-identical", r.Offset, next)
			}
			next++
		}
	}
	return time.Since(start)
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func createTopic(t *testing.T, addr, topic string, configs map[string]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = kadm.StringPtr(v)
	}
	resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

// deleteTopics deletes topics, so that the next round's writes do not
// find a machine whose page cache still holds this round's.
func deleteTopics(t *testing.T, addr string, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).DeleteTopics(context.Background(), topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// TestTieredVolume is the volume test: STRAND_TIERED_VOLUME_MB of
// 1 KiB records (2048: 2 GB) into a topic whose local retention is a
// twentieth of it (100 MB for 2 GB): the local disk stays bounded while
// the store takes the rest, and a consumer from offset 0 reads every
// record in order, byte-identical.
func TestTieredVolume(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("STRAND_TIERED_VOLUME_MB"))
	if mb <= 0 {
		t.Skip("set STRAND_TIERED_VOLUME_MB (e.g. 2048) to run")
	}
	const size = 1024
	n := mb << 20 / size
	local := int64(mb) << 20 / 20
	segment := min(local/4, 16<<20)
	store := longRunStore(t)
	store.UploadInterval = time.Second
	dir := t.TempDir()
	b, err := strand.Start(context.Background(), strand.Config{Dir: dir, TieredStorage: store, RetentionCheckInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	createTopic(t, b.Addr(), "volume", map[string]string{"remote.storage.enable": "true",
		"local.retention.bytes": fmt.Sprint(local), "segment.bytes": fmt.Sprint(segment)})
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
				peak = max(peak, dirBytes(t, filepath.Join(dir, "volume-0")))
			}
		}
	}()
	took := produceVolume(t, b.Addr(), "volume", 0, n, size)
	close(stop)
	<-sampled
	t.Logf("produced %d MB in %v (%.1f MB/s); local disk peaked at %d MB (local.retention.bytes %d MB, segment.bytes %d MB); load %s",
		mb, took.Round(time.Millisecond), float64(mb)/took.Seconds(), peak>>20, local>>20, segment>>20, loadAverage())
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Second) {
		if used := dirBytes(t, filepath.Join(dir, "volume-0")); used <= local+2*segment+(1<<20) {
			t.Logf("after the uploads caught up: %d MB on local disk", used>>20)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("local disk not back under the local retention 5 minutes after produce")
		}
	}
	took = consumeVolume(t, b.Addr(), "volume", n, size)
	t.Logf("consumed %d records from offset 0 in %v (%.1f MB/s), every one byte-identical", n, took.Round(time.Millisecond), float64(mb)/took.Seconds())
}

// TestTieredPerf measures, in STRAND_TIERED_ROUNDS rounds (default 3) of
// STRAND_TIERED_PERF_MB (default 64): produce throughput to a tiered topic
// (uploading every second) and to an untiered one, consume throughput
// from offset 0 of the tiered one (all but the tail in the store) and of
// the untiered one (all local), and the local disk each keeps. Then a
// sustained produce at STRAND_TIERED_SUSTAIN_MBPS (default 100) for
// STRAND_TIERED_SUSTAIN_S seconds (default 10) to a tiered topic: the
// rate reached, the upload rate meanwhile, the peak upload lag and how
// long the uploads took to catch up once produce stopped. It logs each
// round, the medians and the load average, for docs/TIERED.md, and the
// process's CPU time per MB of each produce (the tiered one's with its
// uploads) and each consume: steadier than the rates on a shared machine. STRAND_TIERED_UPLOAD_CONCURRENCY sets --tier-upload-concurrency (4).
func TestTieredPerf(t *testing.T) {
	if os.Getenv("STRAND_TIERED_PERF") == "" {
		t.Skip("set STRAND_TIERED_PERF=1 to run")
	}
	mb := envInt("STRAND_TIERED_PERF_MB", 64)
	rounds := envInt("STRAND_TIERED_ROUNDS", 3)
	const size = 1024
	n := mb << 20 / size
	store := longRunStore(t)
	store.UploadInterval = time.Second
	store.UploadConcurrency = envInt("STRAND_TIERED_UPLOAD_CONCURRENCY", 0) // 0: the default
	dir := t.TempDir()
	b, err := strand.Start(context.Background(), strand.Config{Dir: dir, TieredStorage: store, RetentionCheckInterval: time.Second,
		MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// 8 MiB segments by default, so a round of a few hundred MB uploads
	// many while it produces; Kafka's default is 1 GiB, Redpanda's 128 MiB.
	segment := envInt("STRAND_TIERED_SEGMENT_MB", 8) << 20
	t.Logf("segment.bytes %d MiB", segment>>20)
	var prodOn, prodOff, consRemote, consLocal, diskOn, diskOff, cpuLocal, cpuRemote, cpuProdOn, cpuProdOff []float64
	for r := range rounds {
		on, off := fmt.Sprint("on-", r), fmt.Sprint("off-", r)
		createTopic(t, b.Addr(), on, map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "1", "segment.bytes": fmt.Sprint(segment)})
		createTopic(t, b.Addr(), off, map[string]string{"segment.bytes": fmt.Sprint(segment)})
		rate := func(d time.Duration) float64 { return float64(mb) / d.Seconds() }
		// The CPU of each produce, the tiered one's with its uploads to
		// the end (the pass after it: what the last second's had not yet
		// uploaded), is the cost of a produced MB with and without uploads;
		// with the store in another process, the difference is Strand's
		// own upload work, whatever else runs on the machine.
		produceOff := func() {
			c := processCPU()
			prodOff = append(prodOff, rate(produceVolume(t, b.Addr(), off, 0, n, size)))
			cpuProdOff = append(cpuProdOff, 1000*(processCPU()-c).Seconds()/float64(mb))
		}
		produceOn := func() {
			c := processCPU()
			prodOn = append(prodOn, rate(produceVolume(t, b.Addr(), on, 0, n, size)))
			b.TierPass(false)
			cpuProdOn = append(cpuProdOn, 1000*(processCPU()-c).Seconds()/float64(mb))
		}
		if r%2 == 0 { // alternate which goes first, so a warm-up favours neither
			produceOff()
			produceOn()
		} else {
			produceOn()
			produceOff()
		}
		b.ApplyRetention()
		diskOn = append(diskOn, float64(dirBytes(t, filepath.Join(dir, on+"-0")))/(1<<20))
		diskOff = append(diskOff, float64(dirBytes(t, filepath.Join(dir, off+"-0")))/(1<<20))
		c0 := processCPU()
		consLocal = append(consLocal, rate(consumeVolume(t, b.Addr(), off, n, size)))
		c1 := processCPU()
		consRemote = append(consRemote, rate(consumeVolume(t, b.Addr(), on, n, size)))
		c2 := processCPU()
		cpuLocal = append(cpuLocal, 1000*(c1-c0).Seconds()/float64(mb))
		cpuRemote = append(cpuRemote, 1000*(c2-c1).Seconds()/float64(mb))
		if diskOn[r] > float64(mb)/2 {
			t.Fatalf("round %d: the tiered topic kept %.0f of %d MB on local disk: its uploads did not run (is the store up?)", r, diskOn[r], mb)
		}
		// Each round starts with as much free memory as the last: the
		// untiered topic's pages are not left in the cache to make the
		// next round's writes dearer than this one's.
		deleteTopics(t, b.Addr(), on, off)
		t.Logf("round %d: produce %.1f MB/s untiered, %.1f MB/s tiered (CPU %.2f, %.2f ms/MB with its uploads); consume from 0 %.1f MB/s local, %.1f MB/s remote (CPU %.2f, %.2f ms/MB); local disk %.1f MB untiered, %.1f MB tiered; load %s",
			r, prodOff[r], prodOn[r], cpuProdOff[r], cpuProdOn[r], consLocal[r], consRemote[r], cpuLocal[r], cpuRemote[r], diskOff[r], diskOn[r], loadAverage())
	}
	med := func(v []float64) float64 { // of an even count, the mean of the middle two
		s := slices.Sorted(slices.Values(v))
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	// Each round's own ratio too: its two produces ran back to back, so
	// the machine's drift between rounds cancels in it.
	var paired []float64
	for r := range rounds {
		paired = append(paired, 100*prodOn[r]/prodOff[r])
	}
	t.Logf("produce tiered/untiered of each round: %.0f%% (median %.0f%%)", paired, med(paired))
	t.Logf("medians of %d rounds of %d MB: produce %.1f MB/s untiered, %.1f MB/s tiered (%.0f%%; CPU %.2f, %.2f ms/MB with its uploads: untiered %.0f%% of tiered); consume from 0 %.1f MB/s local, %.1f MB/s remote (%.0f%%; CPU %.2f, %.2f ms/MB: local %.0f%% of remote); local disk %.1f MB untiered, %.1f MB tiered (%.1f MB, %.0f%% saved); load %s",
		rounds, mb, med(prodOff), med(prodOn), 100*med(prodOn)/med(prodOff), med(cpuProdOff), med(cpuProdOn), 100*med(cpuProdOff)/med(cpuProdOn), med(consLocal), med(consRemote), 100*med(consRemote)/med(consLocal),
		med(cpuLocal), med(cpuRemote), 100*med(cpuLocal)/med(cpuRemote),
		med(diskOff), med(diskOn), med(diskOff)-med(diskOn), 100*(1-med(diskOn)/med(diskOff)), loadAverage())
	sustainedUpload(t, b, envInt("STRAND_TIERED_SUSTAIN_MBPS", 100), time.Duration(envInt("STRAND_TIERED_SUSTAIN_S", 10))*time.Second)
}

// longRunStore is the long runs' store: the test's own (in this process,
// on loopback), or with STRAND_TIERED_ENDPOINT=http://host:port one
// served elsewhere, under a prefix of this run's own: storetest's
// TestServeStandalone (e.g. in another network namespace), or any S3
// store with STRAND_TIERED_ACCESS_KEY and STRAND_TIERED_SECRET_KEY its
// credentials (e.g. SeaweedFS from test/seaweedfs.sh, which prints them)
// and STRAND_TIERED_BUCKET the bucket, made if missing (default
// storetest.Bucket).
func longRunStore(t *testing.T) *strand.TieredStorageConfig {
	t.Helper()
	ep := os.Getenv("STRAND_TIERED_ENDPOINT")
	if ep == "" {
		return startObjectStore(t)
	}
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	cfg := &strand.TieredStorageConfig{Endpoint: ep, Bucket: env("STRAND_TIERED_BUCKET", storetest.Bucket),
		AccessKey: env("STRAND_TIERED_ACCESS_KEY", "strand"), SecretKey: env("STRAND_TIERED_SECRET_KEY", "secret"),
		Prefix: fmt.Sprintf("run-%d/", time.Now().UnixNano()), UploadInterval: time.Hour}
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Region: "us-east-1",
		Secure: u.Scheme == "https", BucketLookup: minio.BucketLookupPath, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := mc.BucketExists(context.Background(), cfg.Bucket); err == nil && !ok {
		if err := mc.MakeBucket(context.Background(), cfg.Bucket, minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("object store at %s, bucket %s", ep, cfg.Bucket)
	return cfg
}

// processCPU is the CPU time this process (broker, clients and, unless
// STRAND_TIERED_ENDPOINT, the store) has used: on a machine shared with
// other work a steadier measure of a phase's cost than its rate.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func envInt(name string, def int) int {
	if v, _ := strconv.Atoi(os.Getenv(name)); v > 0 {
		return v
	}
	return def
}

// sustainedUpload produces 1 KiB records to a fresh tiered topic (8 MiB
// segments) at mbps MB/s for d, sampling the upload metrics, then waits
// for the uploads to catch up, and logs whether they kept up.
func sustainedUpload(t *testing.T, b *strand.Broker, mbps int, d time.Duration) {
	t.Helper()
	const topic, size = "sustained", 1024
	createTopic(t, b.Addr(), topic, map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "1", "segment.bytes": fmt.Sprint(8 << 20)})
	lagLabel := `strand_partition_upload_lag_records{partition="0",topic="sustained"}`
	uploaded0 := metricValue(t, b, "strand_tiered_uploaded_bytes_total")
	var peakLag float64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			resp, err := metricsClient.Get("http://" + b.MetricsAddr() + "/metrics")
			if err != nil {
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for line := range strings.SplitSeq(string(body), "\n") {
				if rest, ok := strings.CutPrefix(line, lagLabel+" "); ok {
					v, _ := strconv.ParseFloat(rest, 64)
					peakLag = max(peakLag, v)
				}
			}
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(20000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Paced: every 10 ms the records due by then, so the rate never
	// exceeds mbps; a broker that cannot take it makes Produce block.
	perTick := mbps << 20 / size / 100
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	sent := 0
	for tick := 1; time.Since(start) < d; tick++ {
		for ; sent < tick*perTick; sent++ {
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Value: volumeValue(sent, size)}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Store(&err)
				}
				wg.Done()
			})
		}
		time.Sleep(time.Until(start.Add(time.Duration(tick) * 10 * time.Millisecond)))
	}
	wg.Wait()
	took := time.Since(start)
	if e := failed.Load(); e != nil {
		t.Fatal(*e)
	}
	uploadedDuring := metricValue(t, b, "strand_tiered_uploaded_bytes_total") - uploaded0
	produced := float64(sent) * size / (1 << 20)
	var caught time.Duration
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if metricValue(t, b, `strand_partition_upload_lag_seconds{partition="0",topic="sustained"}`) == 0 {
			caught = time.Since(start) - took
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("uploads not caught up 2 minutes after a sustained produce of %.0f MB", produced)
		}
	}
	close(stop)
	<-sampled
	t.Logf("sustained produce at %d MB/s for %v: %.0f MB in %v (%.1f MB/s); uploaded meanwhile %.1f MB/s; peak upload lag %.0f MB (the active segment and what waits for the next 1 s pass included); every sealed segment uploaded %v after produce stopped; load %s",
		mbps, d, produced, took.Round(time.Millisecond), produced/took.Seconds(), uploadedDuring/(1<<20)/took.Seconds(),
		peakLag*size/(1<<20), caught.Round(time.Millisecond), loadAverage())
}
