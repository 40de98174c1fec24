package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while the server logs to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeStartsAndStops runs serve with a config file, waits for the
// startup line, then cancels (as SIGINT does) and expects a clean stop.
func TestServeStartsAndStops(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "strand.conf")
	data := filepath.Join(dir, "data")
	content := "# test config\nlisten = 127.0.0.1:0\nmetrics-listen = 127.0.0.1:0\nconsole-listen = 127.0.0.1:0\ndata-dir = " + data + "\nnode-id = 4\ntopic.retention.ms = 1000\nlog-format = json\n"
	if err := os.WriteFile(conf, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	cmd := newRootCmd()
	cmd.SetArgs([]string{"serve", "--config", conf, "--node-id", "5"})
	cmd.SetErr(&logs)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), "serving Kafka on") {
		if time.Now().After(deadline) {
			t.Fatalf("no startup line; logs:\n%s", logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v\n%s", err, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	out := logs.String()
	for _, want := range []string{`"node_id":5`, data, `"msg":"strand: serving Kafka on 127.0.0.1:`} {
		if !strings.Contains(out, want) {
			t.Errorf("startup line lacks %q:\n%s", want, out)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "strand: stopped") {
		t.Fatalf("no clean stop:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(data, "meta.json")); err != nil {
		t.Fatalf("data dir not used: %v", err)
	}
}

func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"nonsense\n", "no-such-setting = 1\n", "node-id = many\n"} {
		conf := filepath.Join(dir, "bad.conf")
		if err := os.WriteFile(conf, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := newRootCmd()
		cmd.SetArgs([]string{"serve", "--config", conf})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err == nil {
			t.Errorf("%q: want an error", content)
		}
	}
}

// TestServeRefusesATinyCleanerMap: an offset map too small to be useful is
// a configuration error named after its flag, not a broker that cleans
// nothing.
func TestServeRefusesATinyCleanerMap(t *testing.T) {
	cmd := newRootCmd()
	cmd.SetArgs([]string{"serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-cleaner-dedupe-buffer-size", "100"})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--log-cleaner-dedupe-buffer-size") {
		t.Fatalf("tiny dedupe buffer: %v", err)
	}
}

// TestServeRefusesAnOpenHTTPListener: a console bound beyond loopback with
// no way to authenticate stops strand serve with an error naming the flags
// to give; --http-tls-client-ca without a certificate is a usage error.
func TestServeRefusesAnOpenHTTPListener(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--console-listen", "0.0.0.0:0", "--metrics-listen", "", "--schema-registry-listen", ""}, "--http-tls-cert and --http-tls-key with --sasl-users"},
		{[]string{"--http-tls-client-ca", "ca.pem"}, "--http-tls-client-ca needs --http-tls-cert"},
	} {
		cmd := newRootCmd()
		cmd.SetArgs(append([]string{"serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0"}, tc.args...))
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
