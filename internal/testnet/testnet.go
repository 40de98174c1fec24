// Package testnet hands tests loopback addresses for the listeners they
// start: brokers, raft ports, whole clusters.
package testnet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

var (
	handedOut sync.Map
	// reserved keeps the lock files of the ports this process took open,
	// and so locked, until it exits (however it exits: the kernel drops
	// an flock with its last descriptor).
	reserved struct {
		sync.Mutex
		files []*os.File
	}
)

// reserve takes port for this process across every test process on the
// machine (an flock on a file named for it), or reports that another
// process holds it. A port free at the moment may belong to a node
// another test process stopped and is about to restart: a cluster there
// and a cluster here would otherwise end up sharing a node and its raft
// log. Without a lock directory it falls back to the listen check alone.
func reserve(port int) bool {
	dir := filepath.Join(os.TempDir(), "strand-testnet-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return false
	}
	reserved.Lock()
	reserved.files = append(reserved.files, f)
	reserved.Unlock()
	return true
}

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
		port := lowPort + rand.IntN(highPort-lowPort)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if _, dup := handedOut.LoadOrStore(addr, true); dup {
			continue
		}
		if !reserve(port) {
			continue // another test process's, perhaps between a stop and a restart
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
