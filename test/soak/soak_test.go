package soak

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKillSoak: SIGKILL the broker STRAND_SOAK_KILLS times (default 3)
// while one idempotent producer (acks=all) writes keyed records through
// every restart; then every acknowledged record must be in the log once, at
// its acknowledged partition and offset.
func TestKillSoak(t *testing.T) {
	kills := 3
	if s := os.Getenv("STRAND_SOAK_KILLS"); s != "" {
		var err error
		if kills, err = strconv.Atoi(s); err != nil || kills < 1 {
			t.Fatalf("STRAND_SOAK_KILLS=%q: want a positive count", s)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "strand")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/strand").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	data := filepath.Join(dir, "data")

	srv := startServe(t, bin, addr, data)
	defer func() { srv.stop(t) }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*2*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := kadm.NewClient(adm).CreateTopic(ctx, 4, 1, nil, "soak"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	adm.Close()

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("soak"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	type ack struct {
		partition int32
		offset    int64
	}
	var (
		mu      sync.Mutex
		acked   = map[string]ack{} // value → where the broker said it is
		prodErr error
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Go(func() { // produce until told to stop, through every kill
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			v := "v-" + strconv.Itoa(seq)
			prod.Produce(ctx, &kgo.Record{Key: []byte("k" + strconv.Itoa(seq%97)), Value: []byte(v)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if prodErr == nil {
						prodErr = err
					}
					return
				}
				acked[v] = ack{r.Partition, r.Offset}
			})
		}
	})

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for k := range kills {
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
		srv.kill(t)
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		t.Logf("kill %d/%d: %d records acknowledged so far", k+1, kills, n)
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		srv = startServe(t, bin, addr, data)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if prodErr != nil {
		t.Fatalf("a record failed (the producer retries through restarts; nothing should fail): %v", prodErr)
	}
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged")
	}

	// Read every partition to its end and compare.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("soak"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]ack{}
	dups := 0
	for deadline := time.Now().Add(time.Minute); len(seen) < len(acked) && time.Now().Before(deadline); {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if _, again := seen[v]; again {
				dups++
			}
			seen[v] = ack{r.Partition, r.Offset}
		})
	}
	if dups > 0 {
		t.Errorf("%d values appear twice in the log: an idempotent retry was written again", dups)
	}
	lost, moved := 0, 0
	for v, a := range acked {
		got, ok := seen[v]
		switch {
		case !ok:
			lost++
		case got != a:
			moved++
		}
	}
	if lost > 0 || moved > 0 {
		t.Fatalf("of %d acknowledged records, %d are missing and %d are not where the broker said", len(acked), lost, moved)
	}
	t.Logf("%d kills: all %d acknowledged records present once, at their offsets (%d records in the log)", kills, len(acked), len(seen))
}

type serve struct {
	cmd  *exec.Cmd
	done chan error
}

func startServe(t *testing.T, bin, addr, data string) *serve {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", addr, "--data-dir", data,
		"--metrics-listen", "", "--console-listen", "", "--schema-registry-listen", "", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serve{cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return s
		}
		select {
		case err := <-s.done:
			t.Fatalf("strand serve exited during start-up: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("strand serve did not listen on %s within 30s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *serve) kill(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// stop shuts the broker down cleanly; it must exit 0.
func (s *serve) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("strand serve on SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Error("strand serve did not stop within 30s of SIGTERM")
	}
}
