package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/strandmq/strand"
)

// TestDLQRedriveMetric: records `strand dlq redrive` brings back count in
// strand_dlq_redriven_total (and the console's "redriven", the same
// counter) although the topic is no longer validated — the README's flow:
// validation relaxed, then a redrive — whether the broker has validated
// records of the topic since it started or was restarted in between.
func TestDLQRedriveMetric(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same broker", true: "after a restart"}[restart], func(t *testing.T) {
			dir := t.TempDir()
			start := func() *strand.Broker {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				b, err := strand.Start(ctx, strand.Config{Dir: dir, MetricsAddr: "127.0.0.1:0", ConsoleAddr: "127.0.0.1:0",
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			b := start()
			defer func() { _ = b.Close() }()
			ok(t, b.Addr(), "", "topic", "create", "payments", "--config", "strand.validation=json")
			ok(t, b.Addr(), "{\"amount\":5}\nnot json\n", "produce", "payments")
			ok(t, b.Addr(), "", "topic", "alter", "payments", "--config", "strand.validation=none")
			if restart {
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				b = start()
			}
			r := ok(t, b.Addr(), "", "dlq", "redrive", "payments")
			const metric = `strand_dlq_redriven_total{topic="payments"}`
			if got := scrape(t, b.MetricsAddr())[metric]; got != 1 {
				t.Fatalf("after %q: %s is %v, want 1", r.stdout, metric, got)
			}
			var view struct {
				Ingest struct {
					Redriven int64 `json:"redriven"`
				} `json:"ingest"`
			}
			resp, err := http.Get("http://" + b.ConsoleAddr() + "/api/v1/topics/payments")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(&view); err != nil {
				t.Fatal(err)
			}
			if view.Ingest.Redriven != 1 {
				t.Fatalf("the console's redriven count is %d, want 1", view.Ingest.Redriven)
			}
		})
	}
}
