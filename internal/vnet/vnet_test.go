package vnet

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// pairUp returns a connection from a to b and b's accepted end.
func pairUp(t *testing.T, n *Network) (ab, ba net.Conn) {
	t.Helper()
	ln, err := n.Listen("b", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	ab, err = n.Dial("a", ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ba = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { ab.Close(); ba.Close() })
	return ab, ba
}

func readLine(c net.Conn, d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	return bufio.NewReader(c).ReadString('\n')
}

// TestOneWayCut: a cut from a to b loses a's bytes while b's still reach
// a; healing lets a's through again on the same connection.
func TestOneWayCut(t *testing.T) {
	n := New()
	ab, ba := pairUp(t, n)
	n.Set("a", "b", Fault{Cut: true})
	if _, err := ab.Write([]byte("lost\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := readLine(ba, 200*time.Millisecond); err == nil {
		t.Fatalf("b read %q across a cut", line)
	}
	if _, err := ba.Write([]byte("back\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := readLine(ab, time.Second); err != nil || line != "back\n" {
		t.Fatalf("a read %q, %v: the other direction is not cut", line, err)
	}
	n.Heal()
	if _, err := ab.Write([]byte("through\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := readLine(ba, time.Second); err != nil || line != "through\n" {
		t.Fatalf("after healing b read %q, %v", line, err)
	}
}

// TestDelayAndReset: a delay holds writes back; a reset fails the next
// write, closes the connection and refuses new dials.
func TestDelayAndReset(t *testing.T) {
	n := New()
	ab, ba := pairUp(t, n)
	n.Set("a", "b", Fault{Delay: 150 * time.Millisecond})
	start := time.Now()
	if _, err := ab.Write([]byte("slow\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := readLine(ba, time.Second); err != nil || line != "slow\n" || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("delayed write: %q, %v after %v", line, err, time.Since(start))
	}
	n.Set("a", "b", Fault{Reset: true})
	if _, err := ab.Write([]byte("x\n")); !errors.Is(err, errReset) {
		t.Fatalf("write across a reset: %v", err)
	}
	_ = ba.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadAll(ba); err != nil {
		t.Fatalf("b's end after a reset: %v, want EOF", err)
	}
	if _, err := n.Dial("a", ba.LocalAddr().String(), time.Second); err == nil {
		t.Fatal("dial across a reset succeeded")
	}
}
