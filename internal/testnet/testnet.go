// Package testnet hands tests loopback addresses for the listeners they
// start: brokers, raft ports, whole clusters.
package testnet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

var handedOut sync.Map

// Ports are drawn below the kernel's ephemeral range (32768 and up on
// Linux), which every outgoing connection and every port-0 listener of
// every other test process draws from. A node restarted on its address
// would otherwise find it taken meanwhile — in the worst case by another
// test process's listener, so that its peers talk to a stranger's cluster.
const lowPort, highPort = 12000, 32000

// FreeAddr returns a loopback address with a free port, never one it
// returned before in this process: the kernel may hand a just-closed port
// out again, and two nodes of a test cluster on one port fail to start.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 10000 {
		addr := fmt.Sprintf("127.0.0.1:%d", lowPort+rand.IntN(highPort-lowPort))
		if _, dup := handedOut.LoadOrStore(addr, true); dup {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use here or by another process
		}
		ln.Close()
		return addr
	}
	t.Fatal("testnet: no free loopback port below the ephemeral range")
	return ""
}
