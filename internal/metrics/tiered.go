package metrics

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/tiered"
)

// The tiered-storage families (docs/TIERED.md): per partition where the
// data lives, and the tier's counters. A broker without a tier has none.
var (
	descLocalLogStart = prometheus.NewDesc("strand_partition_local_log_start_offset",
		"First offset on this node's disk of a tiered partition (below it, the object store).", []string{"topic", "partition"}, nil)
	descRemoteBytes = prometheus.NewDesc("strand_partition_remote_bytes",
		"Bytes of a partition's segments in the object store.", []string{"topic", "partition"}, nil)
	descRemoteSegments = prometheus.NewDesc("strand_partition_remote_segments",
		"Segments of a partition in the object store.", []string{"topic", "partition"}, nil)
	descUploadLag = prometheus.NewDesc("strand_partition_upload_lag_records",
		"Committed offsets of a tiered partition not yet in the object store (the active segment included).", []string{"topic", "partition"}, nil)
	descUploadLagSeconds = prometheus.NewDesc("strand_partition_upload_lag_seconds",
		"How long the oldest sealed segment of a tiered partition not yet in the object store has waited (since its newest record); 0 when none waits.", []string{"topic", "partition"}, nil)
	descRemoteReads = prometheus.NewDesc("strand_tiered_reads_total",
		"Fetch reads served from the object store (below a partition's local log start).", nil, nil)
	descUploadedSegments = prometheus.NewDesc("strand_tiered_uploaded_segments_total",
		"Segments uploaded to the object store.", nil, nil)
	descUploadedBytes = prometheus.NewDesc("strand_tiered_uploaded_bytes_total",
		"Segment bytes uploaded to the object store.", nil, nil)
	descUploadErrors = prometheus.NewDesc("strand_tiered_upload_errors_total",
		"Segment uploads that failed after their retries (the next pass tries again).", nil, nil)
	descRemoteDeleted = prometheus.NewDesc("strand_tiered_deleted_segments_total",
		"Remote segments deleted by retention or DeleteRecords.", nil, nil)
	descRemoteReadBytes = prometheus.NewDesc("strand_tiered_read_bytes_total",
		"Batch bytes served from the object store.", nil, nil)
	descRemoteReadErrors = prometheus.NewDesc("strand_tiered_read_errors_total",
		"Reads from the object store that failed.", nil, nil)
	descCacheHits = prometheus.NewDesc("strand_tiered_cache_hits_total",
		"Remote reads served from the chunk cache.", nil, nil)
	descCacheMisses = prometheus.NewDesc("strand_tiered_cache_misses_total",
		"Remote reads that fetched a chunk from the object store.", nil, nil)
	descCacheBytes = prometheus.NewDesc("strand_tiered_cache_bytes",
		"Bytes held by the remote-read chunk cache.", nil, nil)
)

// tieredCollector reads the broker's tier at scrape time.
type tieredCollector struct{ b *broker.Broker }

func (c *tieredCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLocalLogStart, descRemoteBytes, descRemoteSegments, descUploadLag, descUploadLagSeconds, descRemoteReads,
		descUploadedSegments, descUploadedBytes, descUploadErrors, descRemoteDeleted, descRemoteReadBytes,
		descRemoteReadErrors, descCacheHits, descCacheMisses, descCacheBytes} {
		ch <- d
	}
}

func (c *tieredCollector) Collect(ch chan<- prometheus.Metric) {
	tier := c.b.Tier()
	if tier == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	for _, t := range c.b.Topics() {
		for i := range t.Partitions() {
			p, err := t.Partition(broker.PartitionID(i))
			if err != nil || p.Tier() == nil {
				continue
			}
			part := strconv.Itoa(int(i))
			m := p.Tier().Manifest()
			gauge(descLocalLogStart, float64(p.LocalLogStartOffset()), t.Name, part)
			gauge(descRemoteBytes, float64(m.RemoteBytes()), t.Name, part)
			gauge(descRemoteSegments, float64(len(m.Segments)), t.Name, part)
			uploaded := max(p.Tier().UploadedEnd(), p.LocalLogStartOffset())
			gauge(descUploadLag, float64(max(p.HighWatermark()-uploaded, 0)), t.Name, part)
			lagSeconds := 0.0
			if ms, ok := p.Tier().OldestPending(); ok {
				lagSeconds = max(time.Since(time.UnixMilli(ms)).Seconds(), 0)
			}
			gauge(descUploadLagSeconds, lagSeconds, t.Name, part)
		}
	}
	s := tier.Stats()
	counter(descUploadedSegments, s.UploadedSegments.Load())
	counter(descUploadedBytes, s.UploadedBytes.Load())
	counter(descUploadErrors, s.UploadErrors.Load())
	counter(descRemoteDeleted, s.DeletedSegments.Load())
	counter(descRemoteReads, s.RemoteReads.Load())
	counter(descRemoteReadBytes, s.RemoteReadBytes.Load())
	counter(descRemoteReadErrors, s.RemoteReadErrors.Load())
	counter(descCacheHits, s.CacheHits.Load())
	counter(descCacheMisses, s.CacheMisses.Load())
	gauge(descCacheBytes, float64(tier.CacheBytes()))
}

// tieredHealth is /healthz's word on the object-storage tier: a
// "degraded" line and one line a reason when uploads are behind (the store
// has failed every request, or a partition this node leads has had a
// sealed segment waiting, for longer than the tier's bound); nil when they
// are not or the broker has no tier.
func tieredHealth(b *broker.Broker) []string {
	tier := b.Tier()
	if tier == nil {
		return nil
	}
	leading := map[string]*tiered.Partition{}
	for _, t := range b.Topics() {
		for i := range t.Partitions() {
			p, err := t.Partition(broker.PartitionID(i))
			if err != nil || p.Tier() == nil || p.Role() != broker.RoleLeader {
				continue
			}
			leading[t.Name+"-"+strconv.Itoa(int(i))] = p.Tier()
		}
	}
	behind := tier.Health(leading)
	if len(behind) == 0 {
		return nil
	}
	lines := []string{fmt.Sprintf("degraded: uploads to the object store are behind (bound %v; local disk keeps what is not uploaded; see docs/OPERATIONS.md):", tier.UploadLagAlert())}
	for _, r := range behind {
		if r.Partition == "" {
			lines = append(lines, fmt.Sprintf("object store: every request has failed for %v: %v", r.For.Round(time.Second), r.Err))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: its oldest sealed segment not yet uploaded has waited %v", r.Partition, r.For.Round(time.Second)))
	}
	return lines
}
