package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/group"
)

var (
	descLogStart = prometheus.NewDesc("strand_partition_log_start_offset",
		"The partition's log start offset: the oldest offset still readable.", []string{"topic", "partition"}, nil)
	descLogEnd = prometheus.NewDesc("strand_partition_log_end_offset",
		"The partition's log end offset: the next offset to be written.", []string{"topic", "partition"}, nil)
	descHighWatermark = prometheus.NewDesc("strand_partition_high_watermark",
		"The partition's high watermark: consumers read below it.", []string{"topic", "partition"}, nil)
	descLastStable = prometheus.NewDesc("strand_partition_last_stable_offset",
		"The partition's last stable offset: read_committed consumers read below it.", []string{"topic", "partition"}, nil)
	descLSOLag = prometheus.NewDesc("strand_partition_lso_lag",
		"High watermark minus last stable offset: records held back from read_committed consumers by open transactions.", []string{"topic", "partition"}, nil)
	descTxnOngoing = prometheus.NewDesc("strand_transactions_ongoing",
		"Transactions open now on this node's transaction coordinators.", nil, nil)
	descTxnCommitted = prometheus.NewDesc("strand_transactions_committed_total",
		"Transactions this node's coordinators committed.", nil, nil)
	descTxnAborted = prometheus.NewDesc("strand_transactions_aborted_total",
		"Transactions this node's coordinators aborted (by the producer, a fence or a timeout).", nil, nil)
	descTxnTimedOut = prometheus.NewDesc("strand_transactions_timed_out_total",
		"Transactions aborted because they outlived their timeout.", nil, nil)
	descSize = prometheus.NewDesc("strand_partition_size_bytes",
		"Bytes of the partition's segments.", []string{"topic", "partition"}, nil)
	descPartitions = prometheus.NewDesc("strand_topic_partitions",
		"The topic's partition count.", []string{"topic"}, nil)
	descRecordsIn = prometheus.NewDesc("strand_topic_records_in_total",
		"Records appended to the topic by producers.", []string{"topic"}, nil)
	descBytesIn = prometheus.NewDesc("strand_topic_bytes_in_total",
		"Record-batch bytes appended to the topic by producers.", []string{"topic"}, nil)
	descRecordsOut = prometheus.NewDesc("strand_topic_records_out_total",
		"Records of the topic sent to consumers in fetch responses.", []string{"topic"}, nil)
	descBytesOut = prometheus.NewDesc("strand_topic_bytes_out_total",
		"Record-batch bytes of the topic sent to consumers in fetch responses.", []string{"topic"}, nil)
	descValidated = prometheus.NewDesc("strand_topic_records_validated_total",
		"Records of the topic judged by its validator (strand.validation) on the produce path.", []string{"topic"}, nil)
	descQuarantined = prometheus.NewDesc("strand_dlq_quarantined_total",
		"Invalid records of the topic sent to its dead-letter topic instead.", []string{"topic"}, nil)
	descRejected = prometheus.NewDesc("strand_topic_records_rejected_total",
		"Invalid records whose whole batch was refused with INVALID_RECORD (strand.validation.action=reject).", []string{"topic"}, nil)
	descRedriven = prometheus.NewDesc("strand_dlq_redriven_total",
		"Records produced back into the topic from its dead-letter topic and accepted, whoever ran the redrive (records carrying strand.redrive.source).", []string{"topic"}, nil)
	descFailed = prometheus.NewDesc("strand_partitions_failed",
		"Offline partitions: refusing appends after a failed fsync (a restart recovers them) or serving nothing over damaged data (see strand_partitions_damaged).", nil, nil)
	descDamaged = prometheus.NewDesc("strand_partitions_damaged",
		"Partitions offline over damaged durable data (a torn or corrupt sealed segment); an operator repairs them.", nil, nil)
	descGroupLag = prometheus.NewDesc("strand_group_lag",
		"A consumer group's lag on one partition: end offset − committed offset (from the log start without a commit).",
		[]string{"group", "topic", "partition"}, nil)
	descGroupLagTotal = prometheus.NewDesc("strand_group_total_lag",
		"A consumer group's total lag: the sum over its partitions.", []string{"group"}, nil)
	descGroupLagSeconds = prometheus.NewDesc("strand_group_lag_seconds",
		"How long the next record a consumer group would read on one partition has waited (0 when caught up).",
		[]string{"group", "topic", "partition"}, nil)
	descGroupLagSecondsMax = prometheus.NewDesc("strand_group_lag_seconds_max",
		"A consumer group's largest time lag over its partitions.", []string{"group"}, nil)
	descGroupRebalances = prometheus.NewDesc("strand_group_rebalances_total",
		"Target assignment changes of a KIP-848 consumer group (a member joined, left or expired, a subscription or topic changed), since its coordinator loaded it.",
		[]string{"group"}, nil)
	descGroupMoved = prometheus.NewDesc("strand_group_partitions_moved_total",
		"Partitions a KIP-848 consumer group's rebalances moved from one member to another (assign.Moves), since its coordinator loaded it.",
		[]string{"group"}, nil)

	// A cluster member's (absent on a single node).
	descRaftState = prometheus.NewDesc("strand_raft_state",
		"1 for this node's current raft state (leader, follower, candidate, shutdown), 0 for the others.", []string{"state"}, nil)
	descRaftTerm = prometheus.NewDesc("strand_raft_term",
		"This node's raft term.", nil, nil)
	descRaftCommit = prometheus.NewDesc("strand_raft_commit_index",
		"The raft commit index this node knows.", nil, nil)
	descRaftApplied = prometheus.NewDesc("strand_raft_applied_index",
		"The raft index this node's metadata image has applied.", nil, nil)
	descFenced = prometheus.NewDesc("strand_broker_fenced",
		"1 while this node is fenced (the controller has not unfenced it within a session): it serves no partition.", nil, nil)
	descBrokersFenced = prometheus.NewDesc("strand_cluster_brokers_fenced",
		"Registered brokers the cluster's metadata has fenced.", nil, nil)
	descPartitionsLed = prometheus.NewDesc("strand_partitions_led",
		"Partitions this node leads.", nil, nil)
	descUnderReplicated = prometheus.NewDesc("strand_under_replicated_partitions",
		"Partitions this node leads with fewer in-sync replicas than replicas.", nil, nil)
	descUnderMinISR = prometheus.NewDesc("strand_under_min_isr_partitions",
		"Partitions this node leads with fewer in-sync replicas than min.insync.replicas: acks=all produces to them fail.", nil, nil)
	descISRShrinks = prometheus.NewDesc("strand_isr_shrinks_total",
		"ISR shrinks this node's leaders committed (a follower fell behind).", nil, nil)
	descISRExpands = prometheus.NewDesc("strand_isr_expands_total",
		"ISR expansions this node's leaders committed (a follower caught up).", nil, nil)
	descPurgatory = prometheus.NewDesc("strand_produce_purgatory",
		"acks=all produces waiting for their followers (the high watermark).", nil, nil)
	descFollowerLag = prometheus.NewDesc("strand_follower_lag_records",
		"How many records a follower of a partition this node leads is behind.", []string{"topic", "partition", "follower"}, nil)
	descFollowerLagSeconds = prometheus.NewDesc("strand_follower_lag_seconds",
		"How long a follower of a partition this node leads has not been caught up (0 when it is).", []string{"topic", "partition", "follower"}, nil)
)

// brokerCollector reads the broker at scrape time.
type brokerCollector struct {
	b             *broker.Broker
	scrapeTimeout time.Duration
}

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLogStart, descLogEnd, descHighWatermark, descSize,
		descLastStable, descLSOLag, descTxnOngoing, descTxnCommitted, descTxnAborted, descTxnTimedOut,
		descPartitions, descRecordsIn, descBytesIn, descRecordsOut, descBytesOut,
		descValidated, descQuarantined, descRejected, descRedriven, descFailed, descDamaged, descGroupLag, descGroupLagTotal,
		descGroupLagSeconds, descGroupLagSecondsMax, descGroupRebalances, descGroupMoved,
		descRaftState, descRaftTerm, descRaftCommit, descRaftApplied, descFenced, descBrokersFenced, descPartitionsLed,
		descUnderReplicated, descUnderMinISR, descISRShrinks, descISRExpands, descPurgatory, descFollowerLag, descFollowerLagSeconds} {
		ch <- d
	}
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, t := range c.b.Topics() {
		n := t.Partitions()
		gauge(descPartitions, float64(n), t.Name)
		for i := range n {
			p, err := t.Partition(broker.PartitionID(i))
			if err != nil {
				continue
			}
			part := strconv.Itoa(int(i))
			gauge(descLogStart, float64(p.LogStartOffset()), t.Name, part)
			gauge(descLogEnd, float64(p.LogEndOffset()), t.Name, part)
			gauge(descHighWatermark, float64(p.HighWatermark()), t.Name, part)
			lso := p.LastStableOffset()
			gauge(descLastStable, float64(lso), t.Name, part)
			gauge(descLSOLag, float64(max(p.HighWatermark()-lso, 0)), t.Name, part)
			gauge(descSize, float64(p.Size()), t.Name, part)
		}
	}
	ts := c.b.TxnStats()
	gauge(descTxnOngoing, float64(ts.Ongoing))
	counter(descTxnCommitted, ts.Committed)
	counter(descTxnAborted, ts.Aborted)
	counter(descTxnTimedOut, ts.TimedOut)
	for _, s := range c.b.Stats() {
		counter(descRecordsIn, s.RecordsIn, s.Topic)
		counter(descBytesIn, s.BytesIn, s.Topic)
		counter(descRecordsOut, s.RecordsOut, s.Topic)
		counter(descBytesOut, s.BytesOut, s.Topic)
	}
	for _, s := range c.b.IngestStats() {
		counter(descValidated, s.Validated, s.Topic)
		counter(descQuarantined, s.Quarantined, s.Topic)
		counter(descRejected, s.Rejected, s.Topic)
		counter(descRedriven, s.Redriven, s.Topic)
	}
	off, damaged := c.b.OfflinePartitions(), 0
	for _, o := range off {
		if o.Damaged {
			damaged++
		}
	}
	gauge(descFailed, float64(len(off)))
	gauge(descDamaged, float64(damaged))
	c.collectCluster(gauge, counter)
	c.collectLag(gauge, counter)
}

// collectCluster exports a member's raft and fencing state.
func (c *brokerCollector) collectCluster(gauge func(*prometheus.Desc, float64, ...string), counter func(*prometheus.Desc, int64, ...string)) {
	rs, ok := c.b.RaftState()
	if !ok {
		return
	}
	for _, s := range []string{"Leader", "Follower", "Candidate", "Shutdown"} {
		gauge(descRaftState, b2f(rs.State == s), strings.ToLower(s))
	}
	gauge(descRaftTerm, float64(rs.Term))
	gauge(descRaftCommit, float64(rs.CommitIndex))
	gauge(descRaftApplied, float64(rs.Applied))
	gauge(descFenced, b2f(c.b.Fenced()))
	fenced := 0
	for _, bi := range c.b.Brokers() {
		if bi.Fenced {
			fenced++
		}
	}
	gauge(descBrokersFenced, float64(fenced))
	led := 0
	for _, t := range c.b.Topics() {
		for i := range t.Partitions() {
			if p, err := t.Partition(broker.PartitionID(i)); err == nil && p.Role() == broker.RoleLeader && p.Leader() == c.b.NodeID() {
				led++
			}
		}
	}
	gauge(descPartitionsLed, float64(led))
	rep := c.b.ReplicationStats()
	gauge(descUnderReplicated, float64(rep.UnderReplicated))
	gauge(descUnderMinISR, float64(rep.UnderMinISR))
	gauge(descPurgatory, float64(rep.Parked))
	counter(descISRShrinks, rep.ISRShrinks)
	counter(descISRExpands, rep.ISRExpands)
	for _, f := range rep.Followers {
		labels := []string{f.Topic, strconv.Itoa(int(f.Partition)), strconv.Itoa(int(f.Follower))}
		gauge(descFollowerLag, float64(f.Records), labels...)
		gauge(descFollowerLagSeconds, f.Time.Seconds(), labels...)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectLag exports every group's lag (broker.GroupLag). Each group is
// asked of its coordinator goroutine, so a scrape is bounded by
// scrapeTimeout; a group that does not answer in time is left out.
func (c *brokerCollector) collectLag(gauge func(*prometheus.Desc, float64, ...string), counter func(*prometheus.Desc, int64, ...string)) {
	ctx, cancel := scrapeContext(c.scrapeTimeout)
	defer cancel()
	var groups []group.GroupListing
	for _, coord := range c.b.Coordinators() { // the groups this node coordinates
		groups = append(groups, coord.List(ctx, nil)...)
	}
	for _, g := range groups {
		if g.Type == group.TypeConsumer {
			counter(descGroupRebalances, g.Rebalances, g.GroupID)
			counter(descGroupMoved, g.PartitionsMoved, g.GroupID)
		}
		lag, err := c.b.GroupLag(ctx, g.GroupID)
		if err != nil {
			continue
		}
		for _, pl := range lag.Partitions {
			part := strconv.Itoa(int(pl.Partition))
			gauge(descGroupLag, float64(pl.Lag), g.GroupID, pl.Topic, part)
			gauge(descGroupLagSeconds, pl.TimeLag.Seconds(), g.GroupID, pl.Topic, part)
		}
		gauge(descGroupLagTotal, float64(lag.Total), g.GroupID)
		gauge(descGroupLagSecondsMax, lag.MaxTimeLag.Seconds(), g.GroupID)
	}
}
