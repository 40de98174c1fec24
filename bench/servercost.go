package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/wire"
)

// The server-cost workload measures a broker, not a client: every peer
// runs as its own process, and a load generator that costs little (produce
// requests encoded once, sent over raw connections with a window of
// requests in flight, answers only checked for errors) keeps it busy. Each
// run reports the broker process's CPU-seconds per GB (user + system, from
// /proc/<pid>/stat), its resident memory, the acknowledged throughput and
// the load generator's own CPU per GB, so a reader can see that it stayed
// small beside the broker's.

// CostOptions configures the server-cost workload.
type CostOptions struct {
	Workload        string        // "produce" or "consume" (plain fetches of what a produce phase wrote)
	Peers           []string      // "strand", "kfake", "null" (produce only)
	Conns           []int         // connection counts, one run each
	InFlight        int           // requests in flight per connection
	Duration        time.Duration // measured time per run (after Warmup)
	Warmup          time.Duration
	Runs            int // runs of each (peer, conns), alternated
	Partitions      int
	RecordBytes     int
	RecordsPerBatch int
	// PartitionsPerRequest is how many partitions one produce request
	// carries a batch for (consecutive ones; 0 means 1): a client that
	// spreads its records over many partitions packs many small batches
	// into each request.
	PartitionsPerRequest int
	// LeaderAcks makes the produce requests acks=1 instead of acks=all: the
	// leader answers after its own write. On strand-rf3 the followers
	// still copy every byte, so the latency against acks=all's separates
	// the wait for the followers from the CPU they take.
	LeaderAcks bool
	// Fsync makes every acknowledgement wait for an fsync: Strand's
	// flush.messages=1 on the topic (its group commit), kfake's SyncWrites.
	// The null broker stores nothing to sync.
	Fsync     bool
	StrandBin string // the strand binary
	// StrandFlags are added to `strand serve`'s command line (e.g.
	// "--pprof-listen 127.0.0.1:6060" to take a trace during a run).
	StrandFlags []string
	// StrandBConfigs are the topic configs of peer "strand-b": the same
	// binary as "strand" with these set on the topic, so that one run
	// compares two settings in alternation (e.g.
	// strand.page.cache.window.bytes=-1).
	StrandBConfigs map[string]string
	// StrandBFlags are added to strand-b's `strand serve` command line
	// after StrandFlags, to compare two broker settings in alternation
	// (e.g. "--log-writers -1").
	StrandBFlags []string
	Self         string // this program, run with ServeArgs for kfake and null
	Dir          string // parent of the peers' data directories
}

// CostResult is one measured run.
type CostResult struct {
	Workload      string
	Peer          string
	Conns, Run    int
	MBps          float64       // acknowledged record payload, 10^6 bytes per second
	BrokerCPUPerG float64       // broker process CPU-seconds per 10^9 payload bytes
	GenCPUPerG    float64       // load generator CPU-seconds per 10^9 payload bytes
	RSSMiB        float64       // broker's resident memory at the end of the run
	BrokerSys     float64       // share of the broker's CPU spent in the kernel
	P50, P99      time.Duration // request → answer latency in the measured time
	// MachineBusy is the share of all CPUs busy in the measured time (from
	// /proc/stat), and OtherCPUPerG the busy CPU-seconds per 10^9 bytes
	// that were neither the broker's nor the load generator's: the
	// kernel's writeback and network threads, and anything else running.
	// Near 100% busy, throughput says how the machine was shared, not what
	// the broker can do.
	MachineBusy  float64
	OtherCPUPerG float64
}

// ServeFlag is the flag that makes a program run a peer for the workload:
// `<self> -serve-peer NAME -serve-listen ADDR -serve-dir DIR`.
const ServeFlag = "serve-peer"

// ServePeer runs peer name (kfake or null) on addr until the process is
// killed; fsync: kfake syncs every batch.
func ServePeer(name, addr, dir string, fsync bool) error {
	switch name {
	case "kfake":
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		p, _ := strconv.Atoi(port)
		// DataDir: segments on disk, nothing fsynced per batch (as Strand's
		// default flush policy and Kafka's).
		opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(p), kfake.DataDir(dir)}
		if fsync {
			opts = append(opts, kfake.SyncWrites())
		}
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			return err
		}
		defer c.Close()
	case "strand-rf3":
		// Three nodes in this one process, so that its CPU is the
		// cluster's: the leader's write, two follower fetches and two
		// follower writes of every acknowledged byte.
		_, stop, err := startStrandClusterAt(context.Background(), dir, false, addr)
		if err != nil {
			return err
		}
		defer stop()
	case "null":
		b, err := startNullBrokerOn(addr)
		if err != nil {
			return err
		}
		defer b.close()
	case "jetstream":
		srv, err := startJetStreamServer(addr, dir, fsync)
		if err != nil {
			return err
		}
		defer srv.Shutdown()
	default:
		return fmt.Errorf("servercost: cannot serve peer %q", name)
	}
	select {} // until killed
}

// RunServerCost runs every (peer, conns) combination o.Runs times,
// alternating peers, and returns each run's result.
func RunServerCost(ctx context.Context, o CostOptions, progress func(CostResult)) ([]CostResult, error) {
	var out []CostResult
	for run := 1; run <= o.Runs; run++ {
		order := runOrder(o.Peers, run)
		for _, conns := range o.Conns {
			for _, peer := range order {
				r, err := costRunRetry(ctx, o, peer, conns)
				if err != nil {
					return out, fmt.Errorf("%s, %d connections, run %d: %w", peer, conns, run, err)
				}
				r.Run = run
				out = append(out, r)
				if progress != nil {
					progress(r)
				}
			}
		}
	}
	return out, nil
}

// runOrder is the peers' order in run (from 1). A peer's run inherits the
// page cache and free memory the one before it left (a deleted data
// directory's pages are reused cheaply, memory the VM gave back is not),
// so no peer may always follow the same one: odd runs go forward and even
// runs backward, each pair starting one peer further on, so over two runs
// every peer has preceded and followed each neighbour.
func runOrder(peers []string, run int) []string {
	k := ((run - 1) / 2) % len(peers)
	order := append(slices.Clone(peers[k:]), peers[:k]...)
	if run%2 == 0 {
		slices.Reverse(order)
	}
	return order
}

// RunSpread measures Strand with the same load in two shapes, alternated
// run by run: narrow (few partitions, a big batch each) and wide (the same
// request bytes spread as small batches over many partitions). Results
// carry the shape's label as their Peer.
func RunSpread(ctx context.Context, narrow, wide CostOptions, progress func(CostResult)) ([]CostResult, error) {
	var out []CostResult
	for run := 1; run <= narrow.Runs; run++ {
		shapes := []CostOptions{narrow, wide}
		if run%2 == 0 {
			shapes[0], shapes[1] = wide, narrow
		}
		for _, conns := range narrow.Conns {
			for _, o := range shapes {
				r, err := costRunRetry(ctx, o, "strand", conns)
				if err != nil {
					return out, fmt.Errorf("%d partitions, %d connections, run %d: %w", o.Partitions, conns, run, err)
				}
				r.Peer, r.Run = SpreadLabel(o), run
				out = append(out, r)
				if progress != nil {
					progress(r)
				}
			}
		}
	}
	return out, nil
}

// SpreadLabel names a shape of RunSpread.
func SpreadLabel(o CostOptions) string { return fmt.Sprintf("%d partitions", o.Partitions) }

// costRunTries is how many times a run that fails is tried, each time on
// a fresh peer and data directory: on a shared machine a port picked free
// can be taken by another process before a peer binds it ("address
// already in use"), and one such accident should not end an hour's suite.
// A failed try measures nothing, so no figure is chosen among tries.
const costRunTries = 3

// costRunRetry is costRun, tried again (costRunTries in all) when it fails.
func costRunRetry(ctx context.Context, o CostOptions, peer string, conns int) (CostResult, error) {
	for try := 1; ; try++ {
		r, err := costRun(ctx, o, peer, conns)
		if err == nil || try == costRunTries || ctx.Err() != nil {
			return r, err
		}
		fmt.Fprintf(os.Stderr, "servercost: %s, %d connections: %v; trying again on a fresh data directory (%d of %d)\n", peer, conns, err, try+1, costRunTries)
	}
}

// costRunStarted, when set (by tests), is told each run's peer and data
// directory before the peer starts.
var costRunStarted func(peer, dir string)

// costRun starts a fresh peer process on a fresh data directory (removed
// after the run), loads it and measures it.
func costRun(ctx context.Context, o CostOptions, peer string, conns int) (CostResult, error) {
	res := CostResult{Workload: o.Workload, Peer: peer, Conns: conns}
	dir, err := os.MkdirTemp(o.Dir, "cost-"+peer+"-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	if costRunStarted != nil {
		costRunStarted(peer, dir)
	}
	addr, err := freeAddr()
	if err != nil {
		return res, err
	}
	var cmd *exec.Cmd
	if peer == "strand" || peer == "strand-b" {
		cmd = exec.Command(o.StrandBin, "serve", "--listen", addr, "--data-dir", dir,
			"--metrics-listen", "", "--console-listen", "", "--schema-registry-listen", "", "--log-level", "warn")
		cmd.Args = append(cmd.Args, o.StrandFlags...)
		if peer == "strand-b" {
			cmd.Args = append(cmd.Args, o.StrandBFlags...)
		}
	} else {
		cmd = exec.Command(o.Self, "-"+ServeFlag, peer, "-serve-listen", addr, "-serve-dir", dir, "-serve-fsync="+strconv.FormatBool(o.Fsync))
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	configs := map[string]*string{}
	if o.Fsync && (peer == "strand" || peer == "strand-b") {
		one := "1"
		configs["flush.messages"] = &one
	}
	if peer == "strand-b" {
		for k, v := range o.StrandBConfigs {
			configs[k] = &v
		}
	}
	var gen generator
	reqs, payload, err := costRequests(o)
	if err != nil {
		return res, err
	}
	if peer == "jetstream" {
		if o.Workload == "consume" {
			return res, errors.New("the consume workload has no JetStream generator")
		}
		if o.PartitionsPerRequest > 1 {
			return res, errors.New("the JetStream generator publishes one message at a time: no partitions per request")
		}
		js, err := newJSGen(ctx, addr, o)
		if err != nil {
			return res, err
		}
		defer js.close()
		gen = js
	} else {
		create := createCostTopic
		if peer == "strand-rf3" {
			create = createCostTopicRF3
		}
		if err := create(ctx, addr, o.Partitions, configs); err != nil {
			return res, err
		}
		gen = &loadGen{addr: addr, reqs: reqs, inFlight: o.InFlight, check: checkProduceResponse}
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- gen.run(lctx, conns) }()
	select {
	case err := <-errc:
		return res, fmt.Errorf("load generator: %w", err)
	case <-time.After(o.Warmup):
	}
	if o.Workload == "consume" {
		// The produce phase wrote the data; now read it back, again and
		// again, and measure that.
		cancel()
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
			return res, fmt.Errorf("load generator: %w", err)
		}
		perPartition := gen.acknowledged() * int64(max(o.PartitionsPerRequest, 1)) / int64(o.Partitions) * int64(o.RecordsPerBatch)
		if perPartition < int64(o.RecordsPerBatch) {
			return res, errors.New("the produce phase wrote too little to fetch")
		}
		gen = &loadGen{addr: addr, reqs: fetchRequests(o, perPartition), inFlight: o.InFlight, check: checkFetchResponse}
		payload = 1 // check counts the bytes served
		lctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() { errc <- gen.run(lctx, conns) }()
		select {
		case err := <-errc:
			return res, fmt.Errorf("load generator: %w", err)
		case <-time.After(o.Warmup / 2):
		}
	}
	cpu0, sys0, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	gen.measure(true)
	busy0, all0 := machineCPU()
	gen0, acked0, start := selfCPU(), gen.acknowledged(), time.Now()
	select {
	case err := <-errc:
		return res, fmt.Errorf("load generator: %w", err)
	case <-time.After(o.Duration):
	}
	cpu1, sys1, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	gen1, acked1, took := selfCPU(), gen.acknowledged(), time.Since(start)
	busy1, all1 := machineCPU()
	lat := gen.measure(false)
	slices.Sort(lat)
	if len(lat) > 0 {
		res.P50, res.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	rss, err := procRSS(cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		return res, fmt.Errorf("load generator: %w", err)
	}
	bytes := float64(acked1-acked0) * float64(payload)
	if bytes == 0 {
		return res, errors.New("no request acknowledged in the measured time")
	}
	res.MBps = bytes / 1e6 / took.Seconds()
	res.BrokerCPUPerG = (cpu1 - cpu0).Seconds() / (bytes / 1e9)
	res.GenCPUPerG = (gen1 - gen0).Seconds() / (bytes / 1e9)
	res.RSSMiB = float64(rss) / (1 << 20)
	if all1 > all0 {
		res.MachineBusy = float64(busy1-busy0) / float64(all1-all0)
		other := (busy1 - busy0) - (cpu1 - cpu0) - (gen1 - gen0)
		res.OtherCPUPerG = max(other.Seconds(), 0) / (bytes / 1e9)
	}
	if cpu1 > cpu0 {
		res.BrokerSys = float64(sys1-sys0) / float64(cpu1-cpu0)
	}
	return res, nil
}

// createCostTopic waits until the peer answers, then creates the topic.
func createCostTopic(ctx context.Context, addr string, partitions int, configs map[string]*string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Creating thousands of partitions takes seconds (a directory and
	// files each): give each attempt time in proportion.
	attempt := 5*time.Second + time.Duration(partitions)*10*time.Millisecond
	deadline := time.Now().Add(25*time.Second + attempt)
	for {
		cctx, cancel := context.WithTimeout(ctx, attempt)
		resp, err := adm.CreateTopic(cctx, int32(partitions), 1, configs, costTopic)
		cancel()
		if err == nil {
			err = resp.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("create topic on %s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createCostTopicRF3 creates the topic on the three-node peer with every
// partition's replicas on nodes 1, 2, 3: node 1, whose address the load
// generator writes to, leads them all, and acks=all waits for the
// followers (min.insync.replicas 2).
func createCostTopicRF3(ctx context.Context, addr string, partitions int, configs map[string]*string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = costTopic, -1, -1
		for p := range partitions {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), []int32{1, 2, 3}
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, v
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return waitLeaders(ctx, cl, partitions)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("create topic on %s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitLeaders waits until every partition of the cost topic has node 1 as
// its leader and three replicas in sync.
func waitLeaders(ctx context.Context, cl *kgo.Client, partitions int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(costTopic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		ready := 0
		if err == nil && len(resp.Topics) == 1 {
			for _, p := range resp.Topics[0].Partitions {
				if p.Leader == 1 && len(p.ISR) == 3 {
					ready++
				}
			}
		}
		if ready == partitions {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the cost topic's partitions are not all led by node 1 with 3 in sync (%d of %d; %v)", ready, partitions, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const costTopic = "cost"

// costRequests encodes acks=all (o.LeaderAcks: acks=1) Produce v9 requests, each carrying one
// batch of o.RecordsPerBatch records of o.RecordBytes random-looking bytes
// (non-idempotent, so the same bytes may be sent again and again) for each
// of o.PartitionsPerRequest consecutive partitions, framed and ready to
// write; payload is the record bytes one request carries.
func costRequests(o CostOptions) ([][]byte, int, error) {
	per := max(o.PartitionsPerRequest, 1)
	if o.Partitions%per != 0 {
		return nil, 0, fmt.Errorf("%d partitions do not divide into requests of %d", o.Partitions, per)
	}
	val := make([]byte, o.RecordBytes)
	for i := range val {
		val[i] = byte(i*131 + i>>7) // incompressible enough; nothing compresses here anyway
	}
	recs := make([]record.Record, o.RecordsPerBatch)
	for i := range recs {
		recs[i] = record.Record{Offset: record.Offset(i), Value: val}
	}
	batch, err := record.Encode(0, recs, record.DefaultBatchOptions())
	if err != nil {
		return nil, 0, err
	}
	out := make([][]byte, o.Partitions/per)
	for r := range out {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 30_000
		if o.LeaderAcks {
			req.Acks = 1
		}
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = costTopic
		for p := r * per; p < (r+1)*per; p++ {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(p), batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		out[r] = wire.AppendRequest(nil, req, int32(r), "servercost")
	}
	return out, o.RecordBytes * o.RecordsPerBatch * per, nil
}

// generator is a load generator: run keeps the peer busy over conns
// connections until ctx ends; acknowledged counts what it was answered;
// measure starts or stops keeping latencies and returns those kept.
type generator interface {
	run(ctx context.Context, conns int) error
	acknowledged() int64
	measure(on bool) []time.Duration
}

func (g *loadGen) acknowledged() int64 { return g.acked.Load() }

// loadGen sends the pre-encoded requests over conns connections, each
// keeping inFlight requests outstanding; check judges each answer and
// says what it counts for (1 per produce, the bytes served per fetch),
// summed in acked.
type loadGen struct {
	addr     string
	reqs     [][]byte
	inFlight int
	check    func(resp []byte) (int64, error)
	acked    atomic.Int64

	mu        sync.Mutex
	measuring bool            // latencies are kept only while set
	latencies []time.Duration // request → answer, while measuring
}

// measure starts (or stops) keeping latencies and returns those kept.
func (g *loadGen) measure(on bool) []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.latencies
	g.measuring, g.latencies = on, nil
	return out
}

func (g *loadGen) run(ctx context.Context, conns int) error {
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		c, err := net.Dial("tcp", g.addr)
		if err != nil {
			return err
		}
		context.AfterFunc(ctx, func() { c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.conn(c, i); err != nil && ctx.Err() == nil {
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

// conn drives one connection: the writer sends requests (partition i, i+1,
// … in turn) whenever fewer than inFlight are unanswered; the reader
// checks each answer's error codes.
func (g *loadGen) conn(c net.Conn, i int) error {
	// A request's clock starts once it has a slot in the window, not when
	// the writer starts waiting for one: that wait is the previous
	// request's latency, not this one's.
	slots := make(chan struct{}, g.inFlight)
	sent := make(chan time.Time, g.inFlight) // send times, in order
	werr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for n := i; ; n++ {
			select {
			case slots <- struct{}{}:
			case <-done:
				return
			}
			sent <- time.Now()
			if _, err := c.Write(g.reqs[n%len(g.reqs)]); err != nil {
				werr <- err
				return
			}
		}
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	var buf []byte
	for {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			select {
			case err2 := <-werr:
				return err2
			default:
			}
			return err
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		counted, err := g.check(buf)
		if err != nil {
			return err
		}
		g.acked.Add(counted)
		took := time.Since(<-sent)
		<-slots
		g.mu.Lock()
		if g.measuring {
			g.latencies = append(g.latencies, took)
		}
		g.mu.Unlock()
	}
}

// checkProduceResponse decodes a Produce v9 answer (correlation id, an
// empty tagged-field header, the body): one acknowledged request, or its
// first error.
func checkProduceResponse(b []byte) (int64, error) {
	if len(b) < 5 {
		return 0, io.ErrUnexpectedEOF
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	if err := resp.ReadFrom(b[5:]); err != nil {
		return 0, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return 0, fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return 1, nil
}

// fetchVersion addresses topics by name (v13 uses ids) and is flexible.
const fetchVersion = 12

// fetchRequests encodes Fetch requests that read each partition from
// offsets spread over the first perPartition records, 1 MiB at a time:
// a consumer replaying the log, over and over.
func fetchRequests(o CostOptions, perPartition int64) [][]byte {
	var out [][]byte
	step := int64(4 * o.RecordsPerBatch)
	for off := int64(0); off+step <= perPartition || off == 0; off += step {
		for p := range o.Partitions {
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(fetchVersion)
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = costTopic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = int32(p), off, 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			out = append(out, wire.AppendRequest(nil, req, int32(len(out)), "servercost"))
		}
	}
	return out
}

// checkFetchResponse decodes a Fetch answer and returns the record bytes
// it served, or its first error.
func checkFetchResponse(b []byte) (int64, error) {
	if len(b) < 5 {
		return 0, io.ErrUnexpectedEOF
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(fetchVersion)
	if err := resp.ReadFrom(b[5:]); err != nil {
		return 0, err
	}
	if resp.ErrorCode != 0 {
		return 0, kerr.ErrorForCode(resp.ErrorCode)
	}
	var n int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return 0, fmt.Errorf("fetch %s-%d: %w", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			n += int64(len(p.RecordBatches))
		}
	}
	if n == 0 {
		return 0, errors.New("a fetch served no records")
	}
	return n, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// clockTick is the kernel's USER_HZ: /proc times are in its ticks (100 on
// every Linux architecture Go builds for).
const clockTick = 100

// procCPU returns process pid's user + system CPU time so far, and the
// system part.
func procCPU(pid int) (total, sys time.Duration, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	return time.Duration(ut+st) * time.Second / clockTick, time.Duration(st) * time.Second / clockTick, nil
}

// procRSS returns process pid's resident set size in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// machineCPU returns the CPU time all CPUs spent busy and in total, from
// /proc/stat's first line (idle and iowait are not busy); zeros if it
// cannot be read.
func machineCPU() (busy, total time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0
	}
	var ticks int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0
		}
		if i >= 8 { // guest time is already counted in user
			break
		}
		ticks += n
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		busy += time.Duration(n)
	}
	// /proc/stat counts in USER_HZ, 100 per second on Linux.
	return busy * 10 * time.Millisecond, time.Duration(ticks) * 10 * time.Millisecond
}

// selfCPU returns this process's user + system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TouchMemory writes one byte to every page of gib GiB of anonymous memory
// and gives it back. On a virtual machine the first write to a guest page
// costs a fault in the hypervisor; a broker that fills the page cache with
// pages the guest has never used pays it inside write(2) (on this 2-core
// VM, ~2 CPU-s per GB after a reboot, more than the broker's own work), and
// one that recycles pages does not. Touching memory first makes every peer
// write into pages the guest has used before, as on a machine that has run
// a while.
func TouchMemory(gib int) error {
	const chunk = 1 << 30
	var maps [][]byte
	defer func() {
		for _, m := range maps {
			_ = syscall.Munmap(m)
		}
	}()
	for range gib {
		m, err := syscall.Mmap(-1, 0, chunk, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return fmt.Errorf("touch memory: %w", err)
		}
		maps = append(maps, m)
		for i := 0; i < chunk; i += os.Getpagesize() {
			m[i] = 1
		}
	}
	return nil
}
