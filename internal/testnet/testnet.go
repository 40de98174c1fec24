// Package testnet hands tests loopback addresses for the listeners they
// start: brokers, raft ports, whole clusters.
package testnet

import (
	"net"
	"sync"
	"testing"
)

var handedOut sync.Map

// FreeAddr returns a loopback address with a free port, never one it
// returned before in this process: the kernel may hand a just-closed port
// out again, and two nodes of a test cluster on one port fail to start.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if _, dup := handedOut.LoadOrStore(addr, true); !dup {
			return addr
		}
	}
}
