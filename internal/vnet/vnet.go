// Package vnet is the network boundary of cluster tests, as vfs is the
// disk's: listeners and dialers over real loopback TCP whose links can be
// cut (one way or both), delayed or reset per (from, to) pair of named
// nodes, while the test runs. Every connection starts with a one-line
// preamble naming the dialing node, so both ends know their pair.
package vnet

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Fault is what happens to bytes written from one node to another.
type Fault struct {
	// Cut drops every byte written (the writer is not told: a partition,
	// not an error). The other direction is unaffected unless cut too.
	Cut bool
	// Delay holds each write this long before it is sent.
	Delay time.Duration
	// Reset closes connections at their next write, and refuses new ones.
	Reset bool
}

type pair struct{ from, to string }

// Network is a set of named nodes and the faults between them.
type Network struct {
	mu     sync.Mutex
	faults map[pair]Fault
	addrs  map[string]string // listen address → node
}

// New returns a network with no faults.
func New() *Network {
	return &Network{faults: map[pair]Fault{}, addrs: map[string]string{}}
}

// Set installs f on writes from node from to node to (replacing any).
func (n *Network) Set(from, to string, f Fault) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.faults[pair{from, to}] = f
}

// Isolate cuts node from every other node it has a listener or faults
// with, both ways.
func (n *Network) Isolate(node string, others ...string) {
	for _, o := range others {
		n.Set(node, o, Fault{Cut: true})
		n.Set(o, node, Fault{Cut: true})
	}
}

// Heal removes every fault.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.faults = map[pair]Fault{}
}

func (n *Network) fault(from, to string) Fault {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faults[pair{from, to}]
}

// Listen listens on addr (host:port on loopback; port 0 picks one) as
// node.
func (n *Network) Listen(node, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.addrs[ln.Addr().String()] = node
	n.mu.Unlock()
	return &listener{Listener: ln, n: n, node: node}, nil
}

// Dial connects node from to addr, a listener of this network.
func (n *Network) Dial(from, addr string, timeout time.Duration) (net.Conn, error) {
	n.mu.Lock()
	to, ok := n.addrs[addr]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("vnet: no node listens on %s", addr)
	}
	if n.fault(from, to).Reset {
		return nil, fmt.Errorf("vnet: %s → %s: %w", from, to, errReset)
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(c, "vnet %s\n", from); err != nil {
		c.Close()
		return nil, err
	}
	return &conn{Conn: c, r: c, n: n, from: from, to: to}, nil
}

var errReset = errors.New("connection reset by the fault layer")

type listener struct {
	net.Listener
	n    *Network
	node string
}

// Accept reads the dialer's preamble; a connection without one is closed.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		_ = c.SetReadDeadline(time.Time{})
		from, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "vnet ")
		if err != nil || !ok || from == "" {
			c.Close()
			continue
		}
		return &conn{Conn: c, r: br, n: l.n, from: l.node, to: from}, nil
	}
}

// conn applies the (from → to) fault to its writes. Reads see what the
// other end's conn let through.
type conn struct {
	net.Conn
	r        interface{ Read([]byte) (int, error) }
	n        *Network
	from, to string
}

func (c *conn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *conn) Write(p []byte) (int, error) {
	f := c.n.fault(c.from, c.to)
	switch {
	case f.Reset:
		c.Conn.Close()
		return 0, fmt.Errorf("vnet: %s → %s: %w", c.from, c.to, errReset)
	case f.Cut:
		return len(p), nil // lost on the way
	}
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	return c.Conn.Write(p)
}
