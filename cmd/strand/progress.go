package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// countingReader counts the bytes read through it, for progress.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// progress redraws one status line on a terminal: a bar when the total size
// is known, otherwise a count and a rate. It is our own few lines rather
// than a dependency: nothing more is needed.
type progress struct {
	w       io.Writer
	total   int64 // bytes; 0 when unknown
	read    func() int64
	records func() int64
	start   time.Time
	stop    chan struct{}
	done    chan struct{}
}

// startProgress redraws every interval until finish is called.
func startProgress(w io.Writer, total int64, read, records func() int64) *progress {
	p := &progress{w: w, total: total, read: read, records: records,
		start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				fmt.Fprint(p.w, "\r\033[K") // clear the line for the summary
				return
			case <-t.C:
				fmt.Fprint(p.w, "\r\033[K"+p.line())
			}
		}
	}()
	return p
}

func (p *progress) line() string {
	n := p.records()
	rate := float64(n) / time.Since(p.start).Seconds()
	if p.total <= 0 {
		return fmt.Sprintf("%d records  %.0f rec/s", n, rate)
	}
	frac := float64(p.read()) / float64(p.total)
	frac = min(max(frac, 0), 1)
	const width = 30
	full := int(frac * width)
	return fmt.Sprintf("[%s%s] %3.0f%%  %d records  %.0f rec/s",
		strings.Repeat("=", full), strings.Repeat(" ", width-full), frac*100, n, rate)
}

func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}

// isTerminal reports whether f is a character device (a terminal), without
// a dependency on x/term: good enough to choose between a live progress
// line and a plain summary.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
