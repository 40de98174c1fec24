// Command writecost measures what it costs this machine to put a produced
// byte on the disk, without a broker (issue 40 §2): it appends the produce
// workload's batches (256 × 1 KB records, ~262 KB; also 16 KB and 1 MB) to
// N files in parallel, one writer per file as one per partition, in four
// ways, and prints the CPU per GB, throughput and per-append latency of
// each:
//
//   - buffered: one write(2) per batch to an O_APPEND file, the page-cache
//     copy (Strand today, and kfake);
//   - prealloc: buffered, the file allocated -falloc bytes ahead of its
//     end (fallocate KEEP_SIZE, as Kafka's log.preallocate), which spares
//     ext4's delayed-allocation bookkeeping per page;
//   - window: the same with partlog's page-cache window hints
//     (sync_file_range WRITE each quarter window, fadvise DONTNEED a window
//     behind);
//   - direct: O_DIRECT, each batch copied into an aligned staging buffer
//     behind the file's partial last block and written as whole blocks
//     with one pwrite, the tail block written again by the next append;
//   - coalesce: O_DIRECT with everything queued for the file (up to
//     -coalesce bytes) staged and written in one pwrite.
//
// The O_DIRECT files are allocated -falloc bytes ahead of their end (as
// Redpanda preallocates its segments), so that a write neither allocates
// blocks nor extends the file.
//
// Durability is today's in every mode: no fsync per append. An append
// counts as acknowledged when its write returns (page cache or device).
// Each file is fed by a producer keeping -inflight batches queued, as a
// connection with that many requests in flight; "ack" latency is from
// queueing to the write's return, "write" latency the write call alone.
//
// CPU is reported three ways: the process (getrusage, user+system), the
// kernel's threads (flusher and block-layer work, summed from
// /proc/*/stat of kernel threads), and the whole machine (/proc/stat; on a
// shared machine it includes everyone else). The files are closed and
// the file system synced (syncfs) before the kernel-thread and machine
// figures are taken, so the write-back a buffered mode leaves behind is
// counted. With -readback, each mode's file is then sent over a loopback
// TCP connection with sendfile in 1 MiB pieces, as fetches from a consumer
// behind the tail, twice (the first pass reads what O_DIRECT left out of
// the page cache from the disk).
//
//	cd bench && go run ./cmd/writecost -modes buffered,window,direct,coalesce -writers 1,4,8,16
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strandmq/strand/bench"
)

type options struct {
	dir      string
	modes    []string
	writers  []int
	sizes    []int
	bytes    int64
	temps    []string
	pause    time.Duration
	touchGiB int
	rounds   int
	inflight int
	coalesce int
	window   int64
	block    int
	falloc   int64
	readback int64
}

func main() {
	var o options
	var modes, writers, sizes, temps, size, readback, coalesce, window, falloc string
	flag.StringVar(&o.dir, "dir", "", "directory on the data disk to write in (default: a fresh temporary directory)")
	flag.StringVar(&modes, "modes", "buffered,prealloc,window,direct,coalesce", "write modes, in order (each round after the first reverses it)")
	flag.StringVar(&writers, "writers", "1,4,8,16", "files written in parallel, one writer each")
	flag.StringVar(&sizes, "sizes", "262205", "append (batch) sizes in bytes")
	flag.StringVar(&size, "bytes", "2GiB", "bytes written per case, shared among the writers")
	flag.StringVar(&temps, "temps", "cold,warm", "memory before each case: cold (sleep -pause first) or warm (touch -touch GiB first)")
	flag.DurationVar(&o.pause, "pause", 10*time.Second, "idle time before a cold case")
	flag.IntVar(&o.touchGiB, "touch", 3, "GiB written and released before a warm case")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds of every case; even rounds run the modes in reverse order")
	flag.IntVar(&o.inflight, "inflight", 4, "batches kept queued per writer")
	flag.StringVar(&coalesce, "coalesce", "1MiB", "coalesce mode: most bytes written in one pwrite")
	flag.StringVar(&window, "window", "32MiB", "window mode: bytes kept in the page cache behind a file's end")
	flag.IntVar(&o.block, "block", 4096, "O_DIRECT alignment (at least the device's logical block size)")
	flag.StringVar(&falloc, "falloc", "32MiB", "prealloc and O_DIRECT modes: allocate the file this far ahead of its end (fallocate), as a log would preallocate its segment, so writes neither allocate blocks nor extend the file; 0B: off")
	flag.StringVar(&readback, "readback", "0B", "if set, bytes each mode writes (1 writer, the first size) and then sends with sendfile")
	flag.Parse()
	var err error
	o.modes = strings.Split(modes, ",")
	for _, m := range o.modes {
		if !slices.Contains([]string{"buffered", "prealloc", "window", "direct", "coalesce"}, m) {
			fatal(fmt.Errorf("unknown mode %q", m))
		}
	}
	o.temps = strings.Split(temps, ",")
	if o.writers, err = ints(writers); err != nil {
		fatal(err)
	}
	if o.sizes, err = ints(sizes); err != nil {
		fatal(err)
	}
	if o.bytes, err = bench.ParseBytes(size); err != nil {
		fatal(err)
	}
	c, err := bench.ParseBytes(coalesce)
	if err != nil {
		fatal(err)
	}
	o.coalesce = int(c)
	if o.window, err = bench.ParseBytes(window); err != nil {
		fatal(err)
	}
	if o.falloc, err = bench.ParseBytes(falloc); err != nil {
		fatal(err)
	}
	if o.readback, err = bench.ParseBytes(readback); err != nil {
		fatal(err)
	}
	if lbs := logicalBlock(o.dir); lbs > o.block {
		fatal(fmt.Errorf("-block %d is below the device's logical block size %d", o.block, lbs))
	}
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "writecost-"); err != nil {
			fatal(err)
		}
		defer os.RemoveAll(o.dir)
	}
	if err := run(o); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "writecost:", err)
	os.Exit(1)
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// logicalBlock reads the logical block size of the device under dir (or
// the working directory), or 0 if it cannot tell.
func logicalBlock(dir string) int {
	if dir == "" {
		dir = os.TempDir()
	}
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return 0
	}
	maj, min := unix.Major(st.Dev), unix.Minor(st.Dev)
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/queue/logical_block_size", maj, min))
	if err != nil {
		// A partition: its queue is its disk's.
		b, err = os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/../queue/logical_block_size", maj, min))
		if err != nil {
			return 0
		}
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func run(o options) error {
	start := time.Now()
	fmt.Printf("writecost %s, started %s UTC, load %s, dir %s, block %d, falloc %d, GOMAXPROCS %d\n\n",
		strings.Join(os.Args[1:], " "), start.UTC().Format("2006-01-02 15:04:05"), bench.LoadAvg(), o.dir, o.block, o.falloc, runtime.GOMAXPROCS(0))
	// The batches' contents, made once: pools of distinct buffers per
	// writer, so no case pays for generating or first touching them.
	maxW, maxS := slices.Max(o.writers), slices.Max(o.sizes)
	src := make([][][]byte, maxW)
	for w := range src {
		src[w] = make([][]byte, poolSize)
		for i := range src[w] {
			src[w][i] = make([]byte, maxS)
			fill(src[w][i], uint64(w*poolSize+i+1))
		}
	}
	fmt.Println("| round | mode | batch | writers | memory | GB | MB/s | process CPU-s/GB (sys %) | + close & sync | kernel threads CPU-s/GB | machine CPU-s/GB | ack p50 / p99 ms | write p50 / p99 ms | prep | load |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for r := 1; r <= o.rounds; r++ {
		modes := slices.Clone(o.modes)
		if r%2 == 0 {
			slices.Reverse(modes)
		}
		for _, size := range o.sizes {
			for _, n := range o.writers {
				for _, temp := range o.temps {
					for _, mode := range modes {
						prep, err := prepare(o, temp)
						if err != nil {
							return err
						}
						res, err := writeCase(o, mode, size, n, src)
						if err != nil {
							return fmt.Errorf("%s %d×%d: %w", mode, n, size, err)
						}
						gb := float64(res.bytes) / 1e9
						fmt.Printf("| %d | %s | %d | %d | %s | %.2f | %.0f | %.2f (%.0f%%) | %.2f | %.2f | %.2f | %.1f / %.1f | %.2f / %.2f | %s | %s |\n",
							r, mode, size, n, temp, gb, gb*1e3/res.wall.Seconds(),
							res.proc/gb, 100*res.procSys/res.proc, res.procAll/gb, res.kthreads/gb, res.machine/gb,
							ms(res.ack, 50), ms(res.ack, 99), ms(res.write, 50), ms(res.write, 99), prep, bench.LoadAvg())
					}
				}
			}
		}
	}
	if o.readback > 0 {
		fmt.Println()
		if err := readbackAll(o, src); err != nil {
			return err
		}
	}
	fmt.Printf("\nfinished %s UTC (%v), load %s\n", time.Now().UTC().Format("15:04:05"), time.Since(start).Round(time.Second), bench.LoadAvg())
	return nil
}

const poolSize = 8

// fill writes deterministic, incompressible-looking bytes (xorshift).
func fill(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 | 1
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for j := range 8 {
			b[i+j] = byte(x >> (8 * j))
		}
	}
}

// prepare sets the memory a case's writes land in (see "First touch" in
// docs/BENCHMARKS.md): cold is the machine after an idle pause, in which a
// virtual machine's balloon hands freed memory back to the host; warm is
// right after writing and freeing -touch GiB, so the allocator hands back
// pages the guest has just used. It reports the time the touch took (its
// rate shows how cold the memory was).
func prepare(o options, temp string) (string, error) {
	switch temp {
	case "cold":
		time.Sleep(o.pause)
		return fmt.Sprintf("pause %v", o.pause), nil
	case "warm":
		t := time.Now()
		if err := bench.TouchMemory(o.touchGiB); err != nil {
			return "", err
		}
		return fmt.Sprintf("touch %.1f s/GiB", time.Since(t).Seconds()/float64(o.touchGiB)), nil
	}
	return "", fmt.Errorf("unknown memory state %q (cold or warm)", temp)
}

func ms(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	return float64(d[(len(d)-1)*p/100]) / 1e6
}

// open opens one file in mode.
func open(o options, mode, name string) (appender, error) {
	switch mode {
	case "buffered":
		return openBuffered(name, 0, 0)
	case "prealloc":
		return openBuffered(name, 0, o.falloc)
	case "window":
		return openBuffered(name, o.window, 0)
	default:
		return openDirect(name, o.block, o.falloc)
	}
}

type result struct {
	bytes      int64
	wall       time.Duration // first append to last acknowledgement
	proc       float64       // process CPU-s over wall
	procSys    float64
	procAll    float64 // process CPU-s including close and syncfs
	kthreads   float64 // kernel threads' CPU-s until the sync returned
	machine    float64 // the machine's busy CPU-s until the sync returned
	ack, write []time.Duration
}

// writeCase writes o.bytes in size-byte appends to n fresh files.
func writeCase(o options, mode string, size, n int, src [][][]byte) (result, error) {
	dir, err := os.MkdirTemp(o.dir, mode+"-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir) // frees the page cache the case filled
	files := make([]appender, n)
	for i := range files {
		if files[i], err = open(o, mode, filepath.Join(dir, fmt.Sprintf("%05d.log", i))); err != nil {
			return result{}, err
		}
	}
	perWriter := o.bytes / int64(n) / int64(size)
	coalesce := 0
	if mode == "coalesce" {
		coalesce = o.coalesce
	}
	type out struct {
		ack, write []time.Duration
		err        error
	}
	outs := make(chan out, n)
	ru0, ks0, ms0 := rusage(), kthreadCPU(), machineCPU()
	t0 := time.Now()
	for i, f := range files {
		go func() {
			a, w, err := feed(f, src[i], size, int(perWriter), o.inflight, coalesce)
			outs <- out{a, w, err}
		}()
	}
	var res result
	for range n {
		r := <-outs
		if r.err != nil && err == nil {
			err = r.err
		}
		res.ack = append(res.ack, r.ack...)
		res.write = append(res.write, r.write...)
	}
	res.wall = time.Since(t0)
	ru1 := rusage()
	for _, f := range files {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if serr := syncfs(dir); err == nil {
		err = serr
	}
	ru2, ks1, ms1 := rusage(), kthreadCPU(), machineCPU()
	res.bytes = perWriter * int64(size) * int64(n)
	res.proc, res.procSys = ru1.total()-ru0.total(), ru1.sys-ru0.sys
	res.procAll = ru2.total() - ru0.total()
	res.kthreads, res.machine = kthreadDelta(ks0, ks1), ms1-ms0
	slices.Sort(res.ack)
	slices.Sort(res.write)
	return res, err
}

type queued struct {
	p []byte
	t time.Time
}

// feed is one partition: a producer keeps inflight batches queued (as a
// connection with that many requests in flight) and the writer appends
// them in order. With coalesce > 0 the writer stages everything queued,
// up to coalesce bytes, and writes it at once, acknowledging every batch
// in it; otherwise it writes each batch with its own call.
func feed(f appender, pool [][]byte, size, count, inflight, coalesce int) (ack, write []time.Duration, err error) {
	q := make(chan queued, inflight)
	slots := make(chan struct{}, inflight)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(q)
		for i := range count {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			q <- queued{pool[i%len(pool)][:size], time.Now()}
		}
	}()
	ack = make([]time.Duration, 0, count)
	write = make([]time.Duration, 0, count)
	var pending []time.Time
	for b := range q {
		if coalesce == 0 {
			t := time.Now()
			if err = f.Append(b.p); err != nil {
				return ack, write, err
			}
			done := time.Now()
			write = append(write, done.Sub(t))
			ack = append(ack, done.Sub(b.t))
			<-slots
			continue
		}
		f.Stage(b.p)
		staged := len(b.p)
		pending = append(pending[:0], b.t)
	drain:
		for staged < coalesce {
			select {
			case more, ok := <-q:
				if !ok {
					break drain
				}
				f.Stage(more.p)
				staged += len(more.p)
				pending = append(pending, more.t)
			default:
				break drain // the writer is idle: write what it has
			}
		}
		t := time.Now()
		if err = f.Flush(); err != nil {
			return ack, write, err
		}
		done := time.Now()
		write = append(write, done.Sub(t))
		for _, qt := range pending {
			ack = append(ack, done.Sub(qt))
			<-slots
		}
	}
	return ack, write, nil
}

func syncfs(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}

type cpu struct{ user, sys float64 }

func (c cpu) total() float64 { return c.user + c.sys }

func rusage() cpu { return rusageOf(unix.RUSAGE_SELF) }

func rusageOf(who int) cpu {
	var ru unix.Rusage
	_ = unix.Getrusage(who, &ru)
	tv := func(t unix.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return cpu{tv(ru.Utime), tv(ru.Stime)}
}

const userHZ = 100 // USER_HZ, the unit of /proc/stat and /proc/PID/stat

// machineCPU is the machine's busy CPU-seconds since boot: /proc/stat's
// first line without idle and iowait.
func machineCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		busy += n
	}
	return busy / userHZ
}

// kthreadCPU is the CPU-seconds of every kernel thread (PF_KTHREAD) by
// thread id: the flusher, block-layer and reclaim work that no process is
// billed for. kthreadDelta subtracts two samples per thread, so a worker
// that exits between them (kworkers come and go) does not count negative.
func kthreadCPU() map[int]float64 {
	const pfKthread = 0x00200000
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[int]float64)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses and may
		// hold spaces: state is field 3, flags 9, utime 14, stime 15.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		flags, _ := strconv.ParseUint(f[6], 10, 64)
		if flags&pfKthread == 0 {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		out[pid] = (ut + st) / userHZ
	}
	return out
}

func kthreadDelta(before, after map[int]float64) float64 {
	var d float64
	for pid, v := range after {
		if v0, ok := before[pid]; ok && v0 <= v {
			d += v - v0
		} else if !ok {
			d += v // started during the case
		}
	}
	return d
}
