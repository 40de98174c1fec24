package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/share"
)

// Share groups (KIP-932): counters per group and the in-flight window of
// each share-partition, read from the node's share-partition manager at
// scrape time. Nothing is exported where the node hosts no share groups.
var (
	descShareAcquired = prometheus.NewDesc("strand_share_records_acquired_total",
		"Records handed to share-group members (every delivery), by group.", []string{"group"}, nil)
	descShareRedelivered = prometheus.NewDesc("strand_share_records_redelivered_total",
		"Deliveries after a record's first, by group.", []string{"group"}, nil)
	descShareAcked = prometheus.NewDesc("strand_share_records_acknowledged_total",
		"Records acknowledged by share-group members, by group and type (accept, release, reject, renew, gap).", []string{"group", "type"}, nil)
	descShareExpired = prometheus.NewDesc("strand_share_lock_expiries_total",
		"Acquisitions that ended with their lock expiring, by group.", []string{"group"}, nil)
	descShareDead = prometheus.NewDesc("strand_share_records_dead_lettered_total",
		"Records a share group gave up on (rejected, or past share.delivery.count.limit), by group.", []string{"group"}, nil)
	descShareInFlight = prometheus.NewDesc("strand_share_partition_in_flight",
		"Offsets in a share-partition's in-flight window.", []string{"group", "topic", "partition"}, nil)
	descShareLocked = prometheus.NewDesc("strand_share_partition_acquired",
		"Records of a share-partition acquired (locked) by members.", []string{"group", "topic", "partition"}, nil)
)

var ackTypeNames = map[share.AckType]string{share.AckGap: "gap", share.AckAccept: "accept", share.AckRelease: "release", share.AckReject: "reject", share.AckRenew: "renew"}

type shareCollector struct{ b *broker.Broker }

func (c *shareCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descShareAcquired, descShareRedelivered, descShareAcked, descShareExpired, descShareDead, descShareInFlight, descShareLocked} {
		ch <- d
	}
}

func (c *shareCollector) Collect(ch chan<- prometheus.Metric) {
	node := c.b.Share()
	if node == nil {
		return
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, g := range node.Manager.Counters() {
		counter(descShareAcquired, g.Acquired, g.Group)
		counter(descShareRedelivered, g.Redelivered, g.Group)
		for k, name := range ackTypeNames {
			counter(descShareAcked, g.Acknowledged[k], g.Group, name)
		}
		counter(descShareExpired, g.LockExpired, g.Group)
		counter(descShareDead, g.DeadLettered, g.Group)
	}
	for _, st := range node.Manager.Stats("") {
		part := strconv.Itoa(int(st.TP.Partition))
		gauge(descShareInFlight, st.InFlight, st.Group, st.TP.Topic, part)
		gauge(descShareLocked, st.Acquired, st.Group, st.TP.Topic, part)
	}
}
