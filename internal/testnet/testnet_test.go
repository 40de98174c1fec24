package testnet

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrIsReservedAcrossProcesses: a port FreeAddr handed out stays
// locked for this process, so another process's FreeAddr (a second lock
// on the same file, as here through a new descriptor) skips it even while
// nothing listens on it.
func TestFreeAddrIsReservedAcrossProcesses(t *testing.T) {
	addr := FreeAddr(t)
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	if reserve(port) {
		t.Fatalf("port %d handed out here could be reserved again", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the handed-out address is not free to listen on: %v", err)
	}
	ln.Close()
}
