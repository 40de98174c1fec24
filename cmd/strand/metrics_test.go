package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// scrape fetches the broker's /metrics and returns the sample values by
// "name{labels}" as the text format prints them.
func scrape(t *testing.T, metricsAddr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	samples := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples
}

// TestCLIMetricsScrape produces and consumes with the CLI, then scrapes
// /metrics over HTTP: offsets, byte and record counters and the group's lag
// move as they should.
func TestCLIMetricsScrape(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	addr := b.Addr()
	ok(t, addr, "", "topic", "create", "clicks", "-p", "1")
	before := scrape(t, b.MetricsAddr())
	if v := before[`strand_partition_log_end_offset{partition="0",topic="clicks"}`]; v != 0 {
		t.Errorf("end offset before producing = %v", v)
	}

	var in strings.Builder
	for i := range 100 {
		in.WriteString("click-" + strconv.Itoa(i) + "\n")
	}
	ok(t, addr, in.String(), "produce", "clicks")
	ok(t, addr, "", "consume", "clicks", "--group", "dash", "--count", "40")

	m := scrape(t, b.MetricsAddr())
	for name, want := range map[string]float64{
		`strand_partition_log_end_offset{partition="0",topic="clicks"}`:   100,
		`strand_partition_log_start_offset{partition="0",topic="clicks"}`: 0,
		`strand_topic_records_in_total{topic="clicks"}`:                   100,
		`strand_group_lag{group="dash",partition="0",topic="clicks"}`:     60,
		`strand_group_total_lag{group="dash"}`:                            60,
	} {
		if got, found := m[name]; !found || got != want {
			t.Errorf("%s = %v (present: %v), want %v", name, got, found, want)
		}
	}
	bytesIn := m[`strand_topic_bytes_in_total{topic="clicks"}`]
	if bytesIn < float64(in.Len())/4 { // the CLI compresses batches
		t.Errorf("bytes in = %v for %d bytes of input", bytesIn, in.Len())
	}
	if v := m[`strand_topic_bytes_out_total{topic="clicks"}`]; v <= 0 {
		t.Errorf("bytes out = %v after consuming", v)
	}
	if v := m[`strand_topic_records_out_total{topic="clicks"}`]; v < 40 {
		t.Errorf("records out = %v, want ≥ 40", v)
	}
	if v := m[`strand_requests_total{api="Produce"}`]; v < 1 {
		t.Errorf("Produce requests = %v", v)
	}
	if v := m[`strand_request_duration_seconds_count{api="Fetch"}`]; v < 1 {
		t.Errorf("Fetch latency samples = %v", v)
	}
}
