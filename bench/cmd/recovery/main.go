// Command recovery measures how long a replica that was SIGKILLed takes to
// rejoin every ISR after a restart with a given amount of data to catch
// up on: three `strand serve` processes on loopback, a topic with
// replication factor 3 and min.insync.replicas 2, node 3 killed, -bytes of
// acks=all records produced through the two others, node 3 started again,
// and the time from its start until it is back in the ISR of every
// partition. See bench/README.md.
//
//	cd bench && go run ./cmd/recovery -bytes 1GiB
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "recovery:", err)
		os.Exit(1)
	}
}

type options struct {
	bytes      int64
	size       int
	partitions int
	bin        string
	dir        string
}

func run() error {
	var o options
	var bytes string
	flag.StringVar(&bytes, "bytes", "1GiB", "data produced while the follower is down (B, KiB, MiB, GiB)")
	flag.IntVar(&o.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&o.partitions, "partitions", 6, "partitions of the topic")
	flag.StringVar(&o.bin, "strand", "", "strand binary (default: built from ../cmd/strand)")
	flag.StringVar(&o.dir, "dir", "", "data directory root (default: a temporary directory, removed after)")
	flag.Parse()
	var err error
	if o.bytes, err = bench.ParseBytes(bytes); err != nil {
		return fmt.Errorf("-bytes %w", err)
	}
	if o.bytes == 0 {
		return errors.New("-bytes: want more than none")
	}
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "strand-recovery"); err != nil {
			return err
		}
		defer os.RemoveAll(o.dir)
	}
	if o.bin == "" {
		o.bin = filepath.Join(o.dir, "strand")
		fmt.Println("building strand…")
		build := exec.Command("go", "build", "-o", o.bin, "./cmd/strand")
		build.Dir = ".." // Strand's own module: run from bench/
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ../cmd/strand: %v\n%s", err, out)
		}
	}
	return measure(o)
}

// cluster is three `strand serve` processes.
type cluster struct {
	o      options
	quorum string
	addrs  [4]string
	procs  [4]*exec.Cmd
}

func (c *cluster) start(n int) error {
	cmd := exec.Command(c.o.bin, "serve", "--node-id", strconv.Itoa(n), "--listen", c.addrs[n],
		"--data-dir", filepath.Join(c.o.dir, fmt.Sprint("n", n)), "--controller-quorum", c.quorum,
		"--metrics-listen", "", "--console-listen", "", "--schema-registry-listen", "", "--log-level", "info",
		"--broker-heartbeat-interval", "500ms", "--broker-session-timeout", "3s")
	log, err := os.Create(filepath.Join(c.o.dir, fmt.Sprintf("n%d.log", n)))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	c.procs[n] = cmd
	return cmd.Start()
}

func (c *cluster) kill(n int) {
	_ = c.procs[n].Process.Signal(syscall.SIGKILL)
	_ = c.procs[n].Wait()
}

func (c *cluster) stop() {
	for n := 1; n <= 3; n++ {
		if p := c.procs[n]; p != nil && p.ProcessState == nil {
			_ = p.Process.Signal(syscall.SIGTERM)
			_ = p.Wait()
		}
	}
}

func measure(o options) error {
	c := &cluster{o: o}
	var voters []string
	for n := 1; n <= 3; n++ {
		raft, err := bench.FreeAddr()
		if err != nil {
			return err
		}
		if c.addrs[n], err = bench.FreeAddr(); err != nil {
			return err
		}
		voters = append(voters, fmt.Sprintf("%d@%s", n, raft))
	}
	c.quorum = strings.Join(voters, ",")
	defer c.stop()
	for n := 1; n <= 3; n++ {
		if err := c.start(n); err != nil {
			return err
		}
	}
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[1], c.addrs[2]), kgo.DefaultProduceTopic("recovery"),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedBytes(64<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := waitFor(ctx, 30*time.Second, "a cluster of three", func() (bool, error) {
		bs, err := adm.ListBrokers(ctx)
		return err == nil && len(bs) == 3, nil
	}); err != nil {
		return err
	}
	if _, err := adm.CreateTopic(ctx, int32(o.partitions), 3, map[string]*string{"min.insync.replicas": ptr("2")}, "recovery"); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if err := waitISR(ctx, cl, o.partitions, 3, 30*time.Second); err != nil {
		return err
	}
	fmt.Println("SIGKILL node 3")
	c.kill(3)
	if err := waitISR(ctx, cl, o.partitions, 2, 30*time.Second); err != nil {
		return err
	}
	took, err := produce(ctx, cl, o)
	if err != nil {
		return err
	}
	mib := float64(o.bytes) / (1 << 20)
	fmt.Printf("produced %.0f MiB with node 3 down in %v (%.1f MiB/s, acks=all on two replicas)\n", mib, took.Round(time.Millisecond), mib/took.Seconds())
	started := time.Now()
	if err := c.start(3); err != nil {
		return err
	}
	if err := waitISR(ctx, cl, o.partitions, 3, time.Hour); err != nil {
		return err
	}
	back := time.Since(started)
	fmt.Printf("node 3 back in the ISR of all %d partitions %v after its restart: %.1f MiB/s of catch-up (process start included)\n",
		o.partitions, back.Round(time.Millisecond), mib/back.Seconds())
	return nil
}

// produce sends o.bytes of records round-robin over the partitions and
// waits for every acknowledgement, printing progress every tenth.
func produce(ctx context.Context, cl *kgo.Client, o options) (time.Duration, error) {
	n := o.bytes / int64(o.size)
	values := make([][]byte, 256) // random, so nothing compresses them
	for i := range values {
		values[i] = make([]byte, o.size)
		_, _ = rand.Read(values[i])
	}
	errc := make(chan error, 1)
	start := time.Now()
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: values[i%int64(len(values))]}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
		if (i+1)%(n/10) == 0 {
			fmt.Printf("  %d%% sent (%v)\n", (i+1)*100/n, time.Since(start).Round(time.Millisecond))
		}
		select {
		case err := <-errc:
			return 0, fmt.Errorf("produce: %w", err)
		default:
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	select {
	case err := <-errc:
		return 0, fmt.Errorf("produce: %w", err)
	default:
	}
	return time.Since(start), nil
}

// waitISR waits until every partition of the topic has size replicas in
// its ISR, as node 1 sees it: a client left to choose might ask the node
// being restarted and wait out a connection timeout.
func waitISR(ctx context.Context, cl *kgo.Client, partitions, size int, within time.Duration) error {
	return waitFor(ctx, within, fmt.Sprintf("ISRs of %d", size), func() (bool, error) {
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr("recovery")
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != partitions {
			return false, nil
		}
		for _, p := range resp.Topics[0].Partitions {
			if len(p.ISR) != size {
				return false, nil
			}
		}
		return true, nil
	})
}

func waitFor(ctx context.Context, within time.Duration, what string, ok func() (bool, error)) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		done, err := ok()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("timed out waiting for " + what)
}

func ptr(s string) *string { return &s }
