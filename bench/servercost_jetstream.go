package bench

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream in the server-cost workload: nats-server with JetStream file
// storage in its own process (with fsync, every write synced: its
// sync_interval "always"), and a generator of nats.go publishers, one per
// connection, each keeping its window of publishes in flight. A request
// of the Kafka peers (RecordsPerBatch records) is that many messages here;
// acknowledged counts them in requests' worth, so MB/s compare.

func startJetStreamServer(addr, dir string, fsync bool) (*server.Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(port)
	srv, err := server.NewServer(&server.Options{Host: host, Port: p, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, SyncAlways: fsync})
	if err != nil {
		return nil, err
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("nats-server not ready")
	}
	return srv, nil
}

type jsGen struct {
	url      string
	o        CostOptions
	value    []byte
	subjects []string
	msgs     atomic.Int64 // acknowledged publishes

	mu        sync.Mutex
	measuring bool
	latencies []time.Duration
	conns     []*nats.Conn
}

// newJSGen waits for the server and creates the stream: one subject per
// partition, file storage, R1.
func newJSGen(ctx context.Context, addr string, o CostOptions) (*jsGen, error) {
	g := &jsGen{url: "nats://" + addr, o: o, value: make([]byte, o.RecordBytes)}
	for i := range g.value {
		g.value[i] = byte(i*131 + i>>7)
	}
	for i := range o.Partitions {
		g.subjects = append(g.subjects, costTopic+"."+strconv.Itoa(i))
	}
	var nc *nats.Conn
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if nc, err = nats.Connect(g.url); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to nats-server at %s: %w", addr, err)
		}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(cctx, jetstream.StreamConfig{Name: costTopic, Subjects: []string{costTopic + ".*"},
		Storage: jetstream.FileStorage, Replicas: 1}); err != nil {
		return nil, fmt.Errorf("create stream: %w", err)
	}
	return g, nil
}

func (g *jsGen) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, nc := range g.conns {
		nc.Close()
	}
}

// acknowledged is in requests' worth of messages (see the file comment).
func (g *jsGen) acknowledged() int64 { return g.msgs.Load() / int64(g.o.RecordsPerBatch) }

func (g *jsGen) measure(on bool) []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.latencies
	g.measuring, g.latencies = on, nil
	return out
}

func (g *jsGen) run(ctx context.Context, conns int) error {
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		nc, err := nats.Connect(g.url)
		if err != nil {
			return err
		}
		g.mu.Lock()
		g.conns = append(g.conns, nc)
		g.mu.Unlock()
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(max(1, g.o.InFlight*g.o.RecordsPerBatch)))
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.publish(ctx, js, i); err != nil && ctx.Err() == nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// publish sends messages on one connection: synchronously when one is in
// flight (each waits for its PubAck), else asynchronously up to the
// window.
func (g *jsGen) publish(ctx context.Context, js jetstream.JetStream, i int) error {
	window := g.o.InFlight * g.o.RecordsPerBatch
	for n := i; ctx.Err() == nil; n++ {
		subj := g.subjects[n%len(g.subjects)]
		start := time.Now()
		if window <= 1 {
			if _, err := js.Publish(ctx, subj, g.value); err != nil {
				return err
			}
		} else {
			f, err := js.PublishAsync(subj, g.value)
			if err != nil {
				return err
			}
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		g.msgs.Add(1)
		took := time.Since(start)
		g.mu.Lock()
		if g.measuring {
			g.latencies = append(g.latencies, took)
		}
		g.mu.Unlock()
	}
	return ctx.Err()
}
