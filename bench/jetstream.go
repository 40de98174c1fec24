package bench

// NATS JetStream as a peer: an embedded nats-server with JetStream file
// storage in the run's data directory (R1, the server's default sync
// interval, so no fsync per message — like the Kafka peers), driven by
// nats.go's jetstream client. A "topic" of p partitions is a stream with the
// p subjects <topic>.0 … <topic>.<p-1>; records go round-robin over them.

import (
	"context"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

type jsPeer struct {
	o       Options
	srv     *server.Server
	nc      *nats.Conn
	js      jetstream.JetStream
	subjs   map[string][]string // stream → its subjects
	pubErrs atomic.Int64
	pubErr  atomic.Value // first async publish error
}

func startJetStream(ctx context.Context, o Options, dir string) (*jsPeer, error) {
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		return nil, err
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("nats-server not ready")
	}
	p := &jsPeer{o: o, srv: srv, subjs: make(map[string][]string)}
	if p.nc, err = nats.Connect(srv.ClientURL()); err != nil {
		p.close()
		return nil, err
	}
	// The same in-flight window as the Kafka producers.
	p.js, err = jetstream.New(p.nc,
		jetstream.WithPublishAsyncMaxPending(o.Window),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			p.pubErrs.Add(1)
			p.pubErr.CompareAndSwap(nil, err)
		}))
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *jsPeer) close() error {
	if p.nc != nil {
		p.nc.Close()
	}
	p.srv.Shutdown()
	p.srv.WaitForShutdown()
	return nil
}

func (p *jsPeer) createTopic(ctx context.Context, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	subjs := make([]string, partitions)
	for i := range subjs {
		subjs[i] = fmt.Sprintf("%s.%d", topic, i)
	}
	_, err := p.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     topic,
		Subjects: []string{topic + ".*"},
		Storage:  jetstream.FileStorage,
		Replicas: 1,
	})
	if err != nil {
		return fmt.Errorf("create stream %s: %w", topic, err)
	}
	p.subjs[topic] = subjs
	return nil
}

func (p *jsPeer) produce(ctx context.Context, topic string, pl *payload, n int) (time.Duration, any, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	subjs := p.subjs[topic]
	before, err := p.streamMsgs(ctx, topic)
	if err != nil {
		return 0, nil, err
	}
	p.pubErrs.Store(0)
	// A publish blocks while o.Window are unacknowledged; let it wait as
	// long as the workload may take rather than fail after the default 200ms.
	stall := jetstream.WithStallWait(p.o.Timeout)
	start := time.Now()
	for i := range n {
		if _, err := p.js.PublishAsync(subjs[i%len(subjs)], pl.value(i), stall); err != nil {
			return 0, nil, fmt.Errorf("publish %d of %d: %w", i, n, err)
		}
	}
	select {
	case <-p.js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, nil, fmt.Errorf("%d publishes unacknowledged: %w", p.js.PublishAsyncPending(), ctx.Err())
	}
	elapsed := time.Since(start)
	if e := p.pubErrs.Load(); e > 0 {
		return 0, nil, fmt.Errorf("%d of %d publishes failed: %v", e, n, p.pubErr.Load())
	}
	after, err := p.streamMsgs(ctx, topic)
	if err != nil {
		return 0, nil, err
	}
	if after-before != uint64(n) {
		return 0, nil, fmt.Errorf("stream %s grew by %d messages, want %d", topic, after-before, n)
	}
	return elapsed, nil, nil
}

func (p *jsPeer) streamMsgs(ctx context.Context, topic string) (uint64, error) {
	s, err := p.js.Stream(ctx, topic)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

// consume reads the stream from its first message with an ordered consumer
// (the idiomatic fast reader: no acks, flow-controlled pulls) on a fresh
// connection; the clock includes the connection.
func (p *jsPeer) consume(ctx context.Context, topic string, pl *payload, n int, _ any) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	start := time.Now()
	nc, err := nats.Connect(p.srv.ClientURL())
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	cons, err := js.OrderedConsumer(ctx, topic, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return 0, err
	}
	var (
		got   int
		sum   uint64
		bytes int64
		last  uint64
		order error
		done  = make(chan struct{})
		once  sync.Once
	)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if got >= n {
			return
		}
		got++
		d := m.Data()
		bytes += int64(len(d))
		sum += uint64(crc32.Checksum(d, castagnoli))
		if md, err := m.Metadata(); err == nil {
			if md.Sequence.Stream <= last && order == nil {
				order = fmt.Errorf("stream sequence %d after %d", md.Sequence.Stream, last)
			}
			last = md.Sequence.Stream
		}
		if got == n {
			once.Do(func() { close(done) })
		}
	})
	if err != nil {
		return 0, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		cc.Stop()
		return 0, fmt.Errorf("consumed %d of %d messages: %w", got, n, ctx.Err())
	}
	elapsed := time.Since(start)
	cc.Stop()
	if order != nil {
		return 0, order
	}
	if bytes != int64(n)*int64(pl.size) {
		return 0, fmt.Errorf("consumed %d value bytes, want %d", bytes, int64(n)*int64(pl.size))
	}
	if exp := pl.sum(n); sum != exp {
		return 0, fmt.Errorf("value checksum %d, want %d: messages corrupted, duplicated or lost", sum, exp)
	}
	return elapsed, nil
}

// roundTrips: sequential synchronous publishes (each waits for its PubAck).
func (p *jsPeer) roundTrips(ctx context.Context, topic string, pl *payload) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	subjs := p.subjs[topic]
	const warm = 50
	out := make([]time.Duration, 0, p.o.LatencyRecords)
	for i := range warm + p.o.LatencyRecords {
		start := time.Now()
		if _, err := p.js.Publish(ctx, subjs[i%len(subjs)], pl.value(i)); err != nil {
			return nil, fmt.Errorf("publish %d: %w", i, err)
		}
		if d := time.Since(start); i >= warm {
			out = append(out, d)
		}
	}
	sortDurations(out)
	return out, nil
}

// endToEnd: an ordered consumer on its own connection reads the stream
// while stamped messages are published asynchronously at o.E2ERate.
func (p *jsPeer) endToEnd(ctx context.Context, topic string, pl *payload) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	nc, err := nats.Connect(p.srv.ClientURL())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	cons, err := js.OrderedConsumer(ctx, topic, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, err
	}
	e := newE2E(p.o, pl)
	finished := make(chan struct{})
	var once sync.Once
	cc, err := cons.Consume(func(m jetstream.Msg) {
		e.receive(time.Now(), m.Data())
		if e.done() {
			once.Do(func() { close(finished) })
		}
	})
	if err != nil {
		return nil, err
	}
	defer cc.Stop()
	subjs := p.subjs[topic]
	p.pubErrs.Store(0)
	i := 0
	err = e.send(ctx, func(v []byte) error {
		_, err := p.js.PublishAsync(subjs[i%len(subjs)], v)
		i++
		return err
	})
	if err != nil {
		return nil, err
	}
	select {
	case <-p.js.PublishAsyncComplete():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e := p.pubErrs.Load(); e > 0 {
		return nil, fmt.Errorf("%d publishes failed: %v", e, p.pubErr.Load())
	}
	select {
	case <-finished:
	case <-ctx.Done():
		return nil, fmt.Errorf("received %d of %d: %w", e.got, e.total, ctx.Err())
	}
	return e.samples()
}
