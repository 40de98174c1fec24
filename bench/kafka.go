package bench

// The Kafka peers (Strand and kfake): both driven by the same franz-go
// client settings (ClientOpts).

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

// ClientOpts are the franz-go settings every Kafka peer gets; seed is the
// broker. Everything not listed is kgo's default (idempotent producer,
// 50,000 buffered records, 50 MiB / 1 MiB-per-partition fetches,
// FetchMaxWait 5s).
func ClientOpts(seed string, linger time.Duration, batchBytes int) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seed),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(linger),
		kgo.ProducerBatchMaxBytes(int32(batchBytes)),
	}
}

// kafkaPeer is a running Kafka-protocol broker and the clients driving it.
type kafkaPeer struct {
	o     Options
	addr  string
	stop  func() error
	admin *kadm.Client
	prod  *kgo.Client // the producer every produce workload shares (warm)
	rf    int16       // replication factor of the topics it creates
}

// startKafka starts a fresh Strand or kfake broker with its data in dir.
func startKafka(ctx context.Context, o Options, name, dir string) (*kafkaPeer, error) {
	p := &kafkaPeer{}
	switch name {
	case "strand":
		// No fsync: Strand's default flush policy.
		b, err := strand.Start(ctx, strand.Config{
			Dir:    dir,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			return nil, err
		}
		p.addr, p.stop = b.Addr(), b.Close
	case "strand-rf3", "strand-rf3-tls":
		addr, stop, err := startStrandCluster(ctx, dir, name == "strand-rf3-tls")
		if err != nil {
			return nil, err
		}
		p.addr, p.stop, p.rf = addr, stop, clusterNodes
	case "kfake":
		// DataDir persists segments to dir; without SyncWrites nothing is
		// fsynced per batch (kfake's default, like Kafka's).
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir))
		if err != nil {
			return nil, err
		}
		p.addr, p.stop = c.ListenAddrs()[0], func() error { c.Close(); return nil }
	default:
		return nil, fmt.Errorf("unknown Kafka peer %q", name)
	}
	kp, err := newKafkaClients(o, p.addr, p.stop)
	if kp != nil {
		kp.rf = max(p.rf, 1)
	}
	return kp, err
}

// newKafkaClients connects the admin and producer clients to a broker at
// addr; stop stops the broker (also on failure here).
func newKafkaClients(o Options, addr string, stop func() error) (*kafkaPeer, error) {
	p := &kafkaPeer{o: o, addr: addr, stop: stop}
	admin, err := kgo.NewClient(ClientOpts(p.addr, o.Linger, o.BatchBytes)...)
	if err != nil {
		p.stop()
		return nil, err
	}
	p.admin = kadm.NewClient(admin)
	if p.prod, err = kgo.NewClient(ClientOpts(p.addr, o.Linger, o.BatchBytes)...); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *kafkaPeer) close() error {
	if p.prod != nil {
		p.prod.Close()
	}
	if p.admin != nil {
		p.admin.Close()
	}
	return p.stop()
}

func (p *kafkaPeer) createTopic(ctx context.Context, topic string, partitions int) error {
	return createTopicRF(ctx, p.admin, topic, int32(partitions), p.rf, p.o.Timeout)
}

func (p *kafkaPeer) produce(ctx context.Context, topic string, pl *payload, n int) (time.Duration, any, error) {
	st, err := produce(ctx, p.o, p.prod, pl, topic, n)
	return st.elapsed, st.parts, err
}

func (p *kafkaPeer) consume(ctx context.Context, topic string, pl *payload, n int, produced any) (time.Duration, error) {
	want, _ := produced.(map[int32]*partStats)
	elapsed, _, err := consume(ctx, p.o, p.addr, pl, topic, n, want)
	if err != nil {
		return 0, err
	}
	// The log holds exactly what was acknowledged: no duplicates beyond
	// the records the consumer stopped at.
	if want != nil {
		if err := checkLogSize(ctx, p.admin, topic, int64(n), p.o.Timeout); err != nil {
			return 0, err
		}
	}
	return elapsed, nil
}

func (p *kafkaPeer) roundTrips(ctx context.Context, topic string, pl *payload) ([]time.Duration, error) {
	return latency(ctx, p.o, p.prod, pl, topic)
}

// endToEnd: a consumer reads topic from the start while a producer (its own
// client, linger 0 so the client adds no deliberate delay) sends stamped
// records at o.E2ERate.
func (p *kafkaPeer) endToEnd(ctx context.Context, topic string, pl *payload) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	prod, err := kgo.NewClient(ClientOpts(p.addr, 0, p.o.BatchBytes)...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(append(ClientOpts(p.addr, 0, p.o.BatchBytes),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	e := newE2E(p.o, pl)
	done := make(chan error, 1)
	go func() {
		for !e.done() {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				done <- fmt.Errorf("consumed %d of %d records: %w", e.got, e.total, err)
				return
			}
			if errs := fs.Errors(); len(errs) > 0 {
				done <- fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
				return
			}
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) { e.receive(now, r.Value) })
		}
		done <- nil
	}()
	var (
		mu       sync.Mutex
		firstErr error
	)
	err = e.send(ctx, func(v []byte) error {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				firstErr = cmpErr(firstErr, err)
				mu.Unlock()
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := prod.Flush(ctx); err != nil {
		return nil, err
	}
	mu.Lock()
	err = firstErr
	mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("produce: %w", err)
	}
	if err := <-done; err != nil {
		return nil, err
	}
	return e.samples()
}

// e2e paces stamped records and collects their end-to-end latencies. A
// value's first 8 bytes are its send time (Unix ns) and the next 8 its
// index; the first e2eWarm records are not measured.
type e2e struct {
	o     Options
	pl    *payload
	total int
	mu    sync.Mutex
	got   int
	seen  []bool
	lat   []time.Duration
	bad   error
}

const e2eWarm = 200

func newE2E(o Options, pl *payload) *e2e {
	total := e2eWarm + int(float64(o.E2ERate)*o.E2EDuration.Seconds())
	return &e2e{o: o, pl: pl, total: total, seen: make([]bool, total), lat: make([]time.Duration, 0, total)}
}

// send calls publish for every record, o.E2ERate per second.
func (e *e2e) send(ctx context.Context, publish func([]byte) error) error {
	interval := time.Second / time.Duration(e.o.E2ERate)
	start := time.Now()
	for i := range e.total {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		v := make([]byte, max(e.o.Size, 16))
		copy(v[16:], e.pl.value(i))
		binary.BigEndian.PutUint64(v[8:], uint64(i))
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		if err := publish(v); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
	}
	return nil
}

func (e *e2e) receive(now time.Time, v []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(v) < 16 {
		e.bad = cmpErr(e.bad, fmt.Errorf("%d-byte value", len(v)))
		return
	}
	i := binary.BigEndian.Uint64(v[8:])
	if i >= uint64(e.total) || e.seen[i] {
		e.bad = cmpErr(e.bad, fmt.Errorf("record %d duplicated or unknown", i))
		return
	}
	e.seen[i] = true
	e.got++
	if i >= e2eWarm {
		e.lat = append(e.lat, now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(v)))))
	}
}

func (e *e2e) done() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.got >= e.total || e.bad != nil
}

func (e *e2e) samples() ([]time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bad != nil {
		return nil, e.bad
	}
	if e.got != e.total {
		return nil, fmt.Errorf("received %d of %d records", e.got, e.total)
	}
	out := append([]time.Duration(nil), e.lat...)
	sortDurations(out)
	return out, nil
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, timeout time.Duration) error {
	return createTopicRF(ctx, adm, topic, partitions, 1, timeout)
}

// createTopicRF creates topic with rf replicas per partition and waits
// until every partition has a leader and all rf replicas in sync.
func createTopicRF(ctx context.Context, adm *kadm.Client, topic string, partitions int32, rf int16, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	// Wait until metadata shows every partition with a leader.
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				ready := true
				for _, pd := range td.Partitions {
					if pd.Err != nil || pd.Leader < 0 || len(pd.ISR) < int(rf) {
						ready = false
					}
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s never became ready: %w", topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// partStats summarises the offsets of one partition.
type partStats struct {
	n        int64
	min, max int64
	sum      int64
}

func (s *partStats) add(off int64) {
	if s.n == 0 || off < s.min {
		s.min = off
	}
	if s.n == 0 || off > s.max {
		s.max = off
	}
	s.n++
	s.sum += off
}

type produceStats struct {
	elapsed time.Duration
	parts   map[int32]*partStats
}

// produce sends n records asynchronously with at most o.Window of them
// unacknowledged and returns once every one is acknowledged. The window is a
// pool of o.Window records: a record is reused once its promise has run, so
// the client side allocates no record per send and keeps no pointer-heavy
// garbage on the heap the broker shares.
func produce(ctx context.Context, o Options, cl *kgo.Client, pl *payload, topic string, n int) (produceStats, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	window := min(o.Window, n)
	free := make(chan *kgo.Record, window)
	pool := make([]kgo.Record, window)
	for i := range pool {
		free <- &pool[i]
	}
	var (
		mu       sync.Mutex
		firstErr error
		acked    int64
		parts    = make(map[int32]*partStats)
		wg       sync.WaitGroup
	)
	// Promises run serially per partition but possibly concurrently
	// across partitions, hence the mutex.
	promise := func(r *kgo.Record, err error) {
		mu.Lock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
		} else {
			ps := parts[r.Partition]
			if ps == nil {
				ps = new(partStats)
				parts[r.Partition] = ps
			}
			ps.add(r.Offset)
			acked++
		}
		mu.Unlock()
		free <- r
		wg.Done()
	}
	start := time.Now()
	for i := range n {
		var r *kgo.Record
		select {
		case r = <-free:
		case <-ctx.Done():
			return produceStats{}, fmt.Errorf("after %d of %d records: %w", i, n, ctx.Err())
		}
		*r = kgo.Record{Topic: topic, Value: pl.value(i)}
		wg.Add(1)
		cl.Produce(ctx, r, promise)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return produceStats{}, firstErr
	}
	if acked != int64(n) {
		return produceStats{}, fmt.Errorf("%d of %d records acknowledged", acked, n)
	}
	return produceStats{elapsed: elapsed, parts: parts}, nil
}

// consume reads topic from the start with a fresh direct (non-group) client
// until it has n records, checksumming every value byte. The clock includes
// the client's start (a connection and a metadata request on loopback).
// want, if set, is what the producer was told: each partition's consumed
// offsets must match it.
func consume(ctx context.Context, o Options, addr string, pl *payload, topic string, n int, want map[int32]*partStats) (time.Duration, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	cl, err := kgo.NewClient(append(ClientOpts(addr, o.Linger, o.BatchBytes),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	var (
		got   int
		sum   uint64
		bytes int64
		parts = make(map[int32]*partStats)
		last  = make(map[int32]int64)
		order error
	)
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, 0, fmt.Errorf("consumed %d of %d records: %w", got, n, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return 0, 0, fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
			sum += uint64(crc32.Checksum(r.Value, castagnoli))
			if l, ok := last[r.Partition]; ok && r.Offset <= l && order == nil {
				order = fmt.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, l)
			}
			last[r.Partition] = r.Offset
			ps := parts[r.Partition]
			if ps == nil {
				ps = new(partStats)
				parts[r.Partition] = ps
			}
			ps.add(r.Offset)
		})
	}
	elapsed := time.Since(start)
	if order != nil {
		return 0, 0, order
	}
	if got != n {
		return 0, 0, fmt.Errorf("consumed %d records, want exactly %d", got, n)
	}
	if bytes != int64(n)*int64(pl.size) {
		return 0, 0, fmt.Errorf("consumed %d value bytes, want %d", bytes, int64(n)*int64(pl.size))
	}
	if exp := pl.sum(n); sum != exp {
		return 0, 0, fmt.Errorf("value checksum %d, want %d: records corrupted, duplicated or lost", sum, exp)
	}
	if want != nil {
		if len(parts) != len(want) {
			return 0, 0, fmt.Errorf("consumed from %d partitions, produced to %d", len(parts), len(want))
		}
		for p, w := range want {
			if g := parts[p]; g == nil || *g != *w {
				return 0, 0, fmt.Errorf("partition %d: consumed offsets %+v, acknowledged %+v", p, g, w)
			}
		}
	}
	return elapsed, sum, nil
}

// checkLogSize checks the topic holds exactly n records (end − start summed
// over partitions).
func checkLogSize(ctx context.Context, adm *kadm.Client, topic string, n int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	var total int64
	var ferr error
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil {
			ferr = cmpErr(ferr, fmt.Errorf("end offset of %s[%d]: %w", e.Topic, e.Partition, e.Err))
			return
		}
		s, ok := starts.Lookup(e.Topic, e.Partition)
		if !ok || s.Err != nil {
			ferr = cmpErr(ferr, fmt.Errorf("no start offset for %s[%d]", e.Topic, e.Partition))
			return
		}
		total += e.Offset - s.Offset
	})
	if ferr != nil {
		return ferr
	}
	if total != n {
		return fmt.Errorf("log holds %d records (sum of end − start offsets), want %d", total, n)
	}
	return nil
}

func cmpErr(have, next error) error {
	if have != nil {
		return have
	}
	return next
}

// latency runs o.LatencyRecords sequential ProduceSync calls of one record
// each (after a few untimed ones) and returns the sorted round trips.
func latency(ctx context.Context, o Options, cl *kgo.Client, pl *payload, topic string) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	const warm = 50
	out := make([]time.Duration, 0, o.LatencyRecords)
	for i := range warm + o.LatencyRecords {
		r := &kgo.Record{Topic: topic, Value: pl.value(i)}
		start := time.Now()
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if d := time.Since(start); i >= warm {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
