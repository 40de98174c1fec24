package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strandmq/strand/bench"
)

// readbackAll writes o.readback bytes with each mode (one writer, the first
// size), syncs, and sends the file twice over loopback TCP with sendfile
// in 1 MiB pieces: a consumer behind the tail, served from the page cache
// as Strand serves fetches. A file written with O_DIRECT is not in the
// page cache, so its first pass reads from the disk (into pages the read
// must allocate); the second pass finds it cached.
func readbackAll(o options, src [][][]byte) error {
	fmt.Println("| mode written | GB | pass | MB/s | sender thread CPU-s/GB | process CPU-s/GB | kernel threads CPU-s/GB | machine CPU-s/GB | load |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, mode := range o.modes {
		dir, err := os.MkdirTemp(o.dir, "readback-"+mode+"-")
		if err != nil {
			return err
		}
		name := filepath.Join(dir, "00000.log")
		f, err := open(o, mode, name)
		if err != nil {
			return err
		}
		size := o.sizes[0]
		count := int(o.readback / int64(size))
		if _, _, err = feed(f, src[0], size, count, o.inflight, map[bool]int{true: o.coalesce}[mode == "coalesce"]); err != nil {
			return err
		}
		if err = f.Close(); err != nil {
			return err
		}
		if err = syncfs(dir); err != nil {
			return err
		}
		for pass := 1; pass <= 2; pass++ {
			r, err := sendFile(name)
			if err != nil {
				return fmt.Errorf("readback %s: %w", mode, err)
			}
			gb := float64(r.bytes) / 1e9
			fmt.Printf("| %s | %.2f | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %s |\n", mode, gb, pass,
				gb*1e3/r.wall.Seconds(), r.sender/gb, r.proc/gb, r.kthreads/gb, r.machine/gb, bench.LoadAvg())
		}
		if err = os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}

type sendResult struct {
	bytes                           int64
	wall                            time.Duration
	sender, proc, kthreads, machine float64
}

// sendFile sends name over a loopback TCP connection with sendfile, 1 MiB
// at a time, from a goroutine locked to its thread so that its CPU is the
// thread's (RUSAGE_THREAD); a second goroutine reads and discards, as a
// consumer's socket would.
func sendFile(name string) (sendResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sendResult{}, err
	}
	defer ln.Close()
	recvDone := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			recvDone <- -1
			return
		}
		defer c.Close()
		n, _ := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{c}, make([]byte, 1<<20))
		recvDone <- n
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return sendResult{}, err
	}
	f, err := os.Open(name)
	if err != nil {
		conn.Close()
		return sendResult{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		conn.Close()
		return sendResult{}, err
	}
	type sent struct {
		cpu float64
		err error
	}
	done := make(chan sent, 1)
	ru0, ks0, ms0 := rusage(), kthreadCPU(), machineCPU()
	t0 := time.Now()
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		th0 := rusageOf(unix.RUSAGE_THREAD)
		tc := conn.(*net.TCPConn)
		var err error
		for off := int64(0); off < st.Size() && err == nil; off += 1 << 20 {
			// ReadFrom of a limited *os.File is sendfile(2) from the
			// file's offset, which it advances.
			_, err = tc.ReadFrom(&io.LimitedReader{R: f, N: 1 << 20})
		}
		th1 := rusageOf(unix.RUSAGE_THREAD)
		done <- sent{th1.total() - th0.total(), err}
	}()
	s := <-done
	conn.Close()
	got := <-recvDone
	wall := time.Since(t0)
	ru1, ks1, ms1 := rusage(), kthreadCPU(), machineCPU()
	if s.err != nil {
		return sendResult{}, s.err
	}
	if got != st.Size() {
		return sendResult{}, fmt.Errorf("receiver got %d of %d bytes", got, st.Size())
	}
	return sendResult{st.Size(), wall, s.cpu, ru1.total() - ru0.total(), kthreadDelta(ks0, ks1), ms1 - ms0}, nil
}
