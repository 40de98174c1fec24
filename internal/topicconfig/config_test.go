package topicconfig

import (
	"log/slog"
	"testing"
)

// TestConfigTranslation: Kafka's config values become partlog's — its
// meaningful zeros the smallest positive value, Long.MAX "never" partlog's
// zero, -1 "keep forever".
func TestConfigTranslation(t *testing.T) {
	t.Parallel()
	tc, err := New(map[string]string{
		ConfigRetentionMs: "0", ConfigRetentionBytes: "0", ConfigFlushMs: "250", ConfigFlushMessages: "10", ConfigIndexIntervalBytes: "0",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lc := tc.LogConfig(nil, slog.New(slog.DiscardHandler))
	if lc.RetentionTime <= 0 || lc.RetentionBytes != 1 || lc.FlushInterval.Milliseconds() != 250 || lc.FlushMessages != 10 || lc.IndexIntervalBytes != 1 {
		t.Fatalf("%+v", lc)
	}
	dflt, _ := New(nil, nil)
	lc = dflt.LogConfig(nil, slog.New(slog.DiscardHandler))
	if lc.FlushMessages != 0 || lc.FlushInterval != 0 || lc.RetentionBytes != -1 || lc.RetentionRecords != -1 {
		t.Fatalf("defaults: %+v", lc)
	}
	forever, _ := New(map[string]string{ConfigRetentionMs: "-1"}, nil)
	if lc := forever.LogConfig(nil, slog.New(slog.DiscardHandler)); lc.RetentionTime >= 0 {
		t.Fatalf("retention.ms=-1: %v", lc.RetentionTime)
	}
}
