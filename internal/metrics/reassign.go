package metrics

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
)

// The reassignment families: what is moving in the cluster, what this
// node is copying, and what the replication throttles let through. A
// single node has none of them.
var (
	descReassigning = prometheus.NewDesc("strand_reassigning_partitions",
		"Partitions of the cluster with a reassignment in progress (from the metadata; every node reports the same).", nil, nil)
	descAddingBytes = prometheus.NewDesc("strand_reassignment_adding_bytes",
		"Bytes on this node of a replica a reassignment is adding here (compare strand_partition_size_bytes on its leader; strand_follower_lag_records there counts records).", []string{"topic", "partition"}, nil)
	descThrottledBytes = prometheus.NewDesc("strand_replication_throttled_bytes_total",
		"Bytes moved for throttled replicas: side=leader served by this node under leader.replication.throttled.rate, side=follower fetched under follower.replication.throttled.rate or --reassignment-throttle.", []string{"side"}, nil)
)

// reassignCollector reads the metadata image and the node's replication
// quotas at scrape time.
type reassignCollector struct{ b *broker.Broker }

func (c *reassignCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReassigning, descAddingBytes, descThrottledBytes} {
		ch <- d
	}
}

func (c *reassignCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.b.Clustered() {
		return
	}
	img := c.b.MetadataImage()
	self := cluster.NodeID(c.b.NodeID())
	moving := 0
	for _, t := range img.Topics() {
		for p := range t.Partitions {
			reg, ok := img.Partition(t.ID, p)
			if !ok || !reg.Reassigning() {
				continue
			}
			moving++
			if !slices.Contains(reg.AddingReplicas, self) {
				continue
			}
			if bt, err := c.b.Topic(t.Name); err == nil {
				if bp, err := bt.Partition(broker.PartitionID(p)); err == nil {
					ch <- prometheus.MustNewConstMetric(descAddingBytes, prometheus.GaugeValue, float64(bp.Size()), t.Name, strconv.Itoa(int(p)))
				}
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(descReassigning, prometheus.GaugeValue, float64(moving))
	ch <- prometheus.MustNewConstMetric(descThrottledBytes, prometheus.CounterValue, float64(c.b.LeaderQuota().Bytes()), "leader")
	ch <- prometheus.MustNewConstMetric(descThrottledBytes, prometheus.CounterValue, float64(c.b.FollowerQuota().Bytes()), "follower")
}
