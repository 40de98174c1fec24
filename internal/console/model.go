package console

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/assign"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/schemareg"
)

// The view models: what each page shows, and what its /api/v1 twin
// returns as JSON.

// Overview is the front page.
type Overview struct {
	ClusterID string        `json:"cluster_id"`
	NodeID    int32         `json:"node_id"`
	DataDir   string        `json:"data_dir"`
	Topics    []TopicRow    `json:"topics"`
	Groups    []GroupRow    `json:"groups"`
	Generated Time          `json:"generated"`
	Totals    OverviewTotal `json:"totals"`
	// FailedPartitions refuse appends after a failed fsync until the broker
	// restarts (/healthz reports them too).
	FailedPartitions []string `json:"failed_partitions,omitempty"`
	// Offline says why each of them is offline.
	Offline []broker.OfflinePartition `json:"offline_partitions,omitempty"`
}

// OverviewTotal sums the topic rows.
type OverviewTotal struct {
	Topics     int   `json:"topics"`
	Partitions int32 `json:"partitions"`
	Records    int64 `json:"records"`
	Bytes      int64 `json:"bytes"`
}

// TopicRow is one topic in the overview.
type TopicRow struct {
	Name       string `json:"name"`
	Partitions int32  `json:"partitions"`
	// Records is Σ (high watermark − log start): what a consumer from the
	// start would read, compacted gaps aside.
	Records       int64  `json:"records"`
	Bytes         int64  `json:"bytes"`
	CleanupPolicy string `json:"cleanup_policy"`
	Validation    string `json:"validation"`
	// DLQ names the topic's dead-letter topic when it is validated or the
	// topic exists; DLQExists says whether there is a page to link to.
	DLQ       string `json:"dlq,omitempty"`
	DLQExists bool   `json:"dlq_exists"`
	Internal  bool   `json:"internal"`
}

// GroupRow is one consumer group in the overview.
type GroupRow struct {
	ID           string `json:"id"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Lag          int64  `json:"lag"`
	// TimeLagSeconds is the group's largest time lag: how long the oldest
	// record it has not read has waited.
	TimeLagSeconds float64 `json:"time_lag_seconds"`
}

// TopicDetail is a topic's page.
type TopicDetail struct {
	Name       string         `json:"name"`
	ID         string         `json:"id"`
	Partitions []PartitionRow `json:"partitions"`
	Configs    []ConfigRow    `json:"configs"`
	Ingest     IngestRow      `json:"ingest"`
	// Groups are the groups reading the topic (committed offsets or
	// assigned partitions), among those this node coordinates.
	Groups    []TopicGroup `json:"groups"`
	DLQ       string       `json:"dlq,omitempty"`
	DLQExists bool         `json:"dlq_exists"`
	Internal  bool         `json:"internal"`
	// Schemas are the registry's live versions of the topic's subjects
	// under TopicNameStrategy (<topic>-key, <topic>-value).
	Schemas []SchemaRow `json:"schemas"`
	// Tiered: some partition on this node has a remote tier (TierRow).
	Tiered bool `json:"tiered"`
}

// SchemaRow is one version of one of a topic's subjects.
type SchemaRow struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Type    string `json:"type"`
}

// topicSchemas lists the registry's versions of a topic's subjects.
func topicSchemas(b *broker.Broker, topic string) []SchemaRow {
	out := []SchemaRow{}
	b.Schemas().View(func(st *schemareg.State) {
		for _, subject := range []string{topic + "-key", topic + "-value"} {
			for _, v := range st.Versions(subject) {
				typ := v.SchemaType
				if typ == "" {
					typ = string(schemareg.Avro)
				}
				out = append(out, SchemaRow{Subject: subject, Version: v.Version, ID: v.ID, Type: typ})
			}
		}
	})
	return out
}

// IngestRow is a topic's validation counters since the broker started.
type IngestRow struct {
	Validated   int64 `json:"validated"`
	Accepted    int64 `json:"accepted"`
	Quarantined int64 `json:"quarantined"`
	Redriven    int64 `json:"redriven"`
}

// PartitionRow is one partition of a topic.
type PartitionRow struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	// UnderReplicated: fewer in-sync replicas than replicas.
	UnderReplicated bool `json:"under_replicated"`
	// Adding and Removing: a reassignment in progress adds these
	// replicas (they copy the partition) and then removes those.
	Adding   []int32 `json:"adding,omitempty"`
	Removing []int32 `json:"removing,omitempty"`
	// Local: this node holds a replica, so the offsets and size below are
	// its own (a follower's lag its leader by a fetch); elsewhere they are
	// -1 and 0.
	Local         bool  `json:"local"`
	LogStart      int64 `json:"log_start_offset"`
	HighWatermark int64 `json:"high_watermark"`
	// LastStable is the last stable offset: read_committed consumers
	// read below it; below the high watermark while a transaction is open.
	LastStable int64 `json:"last_stable_offset"`
	Bytes      int64 `json:"bytes"`
	// Tier, for a partition of a tiered topic (docs/TIERED.md) on this
	// node: which offsets are in the object store and which on disk.
	Tier *TierRow `json:"tier,omitempty"`
}

// TierRow says where a tiered partition's data lives: the object store
// holds [RemoteStart, UploadedEnd), this node's disk [LocalStart, the high
// watermark]. RemoteStart is -1 while the store holds nothing (or its
// manifest has not been read yet).
type TierRow struct {
	RemoteStart    int64 `json:"remote_start_offset"`
	UploadedEnd    int64 `json:"remote_end_offset"`
	RemoteBytes    int64 `json:"remote_bytes"`
	RemoteSegments int   `json:"remote_segments"`
	LocalStart     int64 `json:"local_start_offset"`
	LocalBytes     int64 `json:"local_bytes"`
}

// ConfigRow is one topic config and where its value comes from.
type ConfigRow struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"` // topic, broker or default
}

// GroupDetail is a consumer group's page.
type GroupDetail struct {
	ID           string      `json:"id"`
	State        string      `json:"state"`
	ProtocolType string      `json:"protocol_type"`
	Protocol     string      `json:"protocol"`
	Members      []MemberRow `json:"members"`
	Lag          []LagRow    `json:"lag"`
	TotalLag     int64       `json:"total_lag"`
	// MaxTimeLagSeconds is the largest partition time lag.
	MaxTimeLagSeconds float64 `json:"max_time_lag_seconds"`
	// LagHistory is the console's recent samples of the group's lag,
	// oldest first (see lagHistory).
	LagHistory []LagSample `json:"lag_history"`
	// Type is "classic", "consumer" (KIP-848) or "share" (KIP-932). A consumer group also has
	// its group and assignment epochs, the server assignor in use, and the
	// history of its last rebalances, oldest first.
	Type            string         `json:"type"`
	Epoch           int32          `json:"epoch,omitempty"`
	AssignmentEpoch int32          `json:"assignment_epoch,omitempty"`
	Assignor        string         `json:"assignor,omitempty"`
	Rebalances      []RebalanceRow `json:"rebalances,omitempty"`
	// SharePartitions: a share group's (Type "share") share-partitions
	// on this node (share.go).
	SharePartitions []SharePartitionRow `json:"share_partitions,omitempty"`
}

// RebalanceRow is one change of a consumer group's target assignment.
type RebalanceRow struct {
	Time    time.Time      `json:"time"`
	Reason  string         `json:"reason"`
	Epoch   int32          `json:"epoch"`
	Members int            `json:"members"`
	Moved   int            `json:"moved"`
	MovedTo map[string]int `json:"moved_to"`
	// HandedOver partitions went from a releasing member to a new owner
	// after this change; the longest went MaxUnownedSeconds unconsumed.
	HandedOver        int     `json:"handed_over"`
	MaxUnownedSeconds float64 `json:"max_unowned_seconds"`
}

// MemberRow is one member of a group and the partitions assigned to it
// (consumer groups while Stable; empty otherwise).
type MemberRow struct {
	ID         string            `json:"id"`
	InstanceID string            `json:"instance_id,omitempty"`
	ClientID   string            `json:"client_id"`
	Host       string            `json:"host"`
	Assignment []TopicPartitions `json:"assignment"`
	// Consumer-protocol members only: the member epoch and the target the
	// broker is moving the member to.
	Epoch  int32             `json:"member_epoch,omitempty"`
	Target []TopicPartitions `json:"target_assignment,omitempty"`
}

// TopicPartitions is one topic's partitions in an assignment.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// LagRow is one partition's committed offset and lag.
type LagRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"` // -1: none
	End       int64  `json:"high_watermark"`
	Lag       int64  `json:"lag"` // -1: unknown (assigned, never committed)
	// TimeLagSeconds: how long the next record to read has waited.
	TimeLagSeconds float64 `json:"time_lag_seconds"`
	// Member holds the partition in the group's current assignment ("":
	// nobody).
	Member string `json:"member_id,omitempty"`
}

// errNotFound marks an unknown topic, partition or group: HTTP 404.
var errNotFound = errors.New("not found")

// errBadRequest marks a malformed query: HTTP 400.
var errBadRequest = errors.New("bad request")

func overview(ctx context.Context, b *broker.Broker) (Overview, error) {
	o := Overview{ClusterID: b.ClusterID(), NodeID: int32(b.NodeID()), DataDir: b.Dir(), Generated: Time(time.Now()),
		FailedPartitions: b.FailedPartitions(), Offline: b.OfflinePartitions()}
	for _, t := range b.Topics() {
		row := TopicRow{Name: t.Name, Partitions: t.Partitions(), Internal: broker.IsInternalTopic(t.Name)}
		row.CleanupPolicy, _ = t.Config.Get(broker.ConfigCleanupPolicy)
		row.Validation, _ = t.Config.Get(broker.ConfigValidation)
		row.DLQ, row.DLQExists = dlqOf(b, t)
		for i := range t.Partitions() {
			p, err := t.Partition(broker.PartitionID(i))
			if err != nil {
				continue // deleted meanwhile
			}
			row.Records += int64(p.HighWatermark() - p.LogStartOffset())
			row.Bytes += p.Size()
		}
		o.Topics = append(o.Topics, row)
		o.Totals.Topics++
		o.Totals.Partitions += row.Partitions
		o.Totals.Records += row.Records
		o.Totals.Bytes += row.Bytes
	}
	for _, l := range listGroups(ctx, b) { // the groups this node coordinates
		row := GroupRow{ID: l.GroupID, State: l.State.String(), ProtocolType: l.ProtocolType}
		if lag, err := b.GroupLag(ctx, l.GroupID); err == nil {
			row.Lag, row.TimeLagSeconds = lag.Total, lag.MaxTimeLag.Seconds()
		}
		o.Groups = append(o.Groups, row)
	}
	return o, nil
}

// reassigning returns the replicas a reassignment of the partition is
// adding and removing (none: nothing moves).
func reassigning(b *broker.Broker, topic broker.TopicID, p int32) (adding, removing []int32) {
	if !b.Clustered() {
		return nil, nil
	}
	reg, ok := b.MetadataImage().Partition(cluster.TopicID(topic), p)
	if !ok || !reg.Reassigning() {
		return nil, nil
	}
	return slices.Clone(reg.AddingReplicas), slices.Clone(reg.RemovingReplicas)
}

func topicDetail(ctx context.Context, b *broker.Broker, name string) (TopicDetail, error) {
	t, err := b.Topic(name)
	if err != nil {
		return TopicDetail{}, fmt.Errorf("%w: topic %q", errNotFound, name)
	}
	d := TopicDetail{Name: t.Name, ID: fmt.Sprintf("%x", t.ID[:]), Internal: broker.IsInternalTopic(t.Name)}
	d.DLQ, d.DLQExists = dlqOf(b, t)
	d.Groups = topicGroups(ctx, b, t.Name)
	d.Schemas = topicSchemas(b, t.Name)
	st := b.TopicIngestStats(t.Name)
	d.Ingest = IngestRow{Validated: st.Validated, Accepted: st.Accepted, Quarantined: st.Quarantined, Redriven: st.Redriven}
	for i := range t.Partitions() {
		info := b.PartitionInfo(t, broker.PartitionID(i))
		row := PartitionRow{Partition: i, Leader: int32(info.Leader), LeaderEpoch: info.LeaderEpoch,
			Replicas: int32s(info.Replicas), ISR: int32s(info.ISR), UnderReplicated: len(info.ISR) < len(info.Replicas),
			LogStart: -1, HighWatermark: -1, LastStable: -1}
		row.Adding, row.Removing = reassigning(b, t.ID, i)
		if p, err := t.Partition(broker.PartitionID(i)); err == nil {
			row.Local, row.LogStart, row.HighWatermark, row.Bytes = true, int64(p.LogStartOffset()), int64(p.HighWatermark()), p.Size()
			row.LastStable = int64(p.LastStableOffset())
			if tp := p.Tier(); tp != nil {
				m := tp.Manifest()
				row.Tier = &TierRow{RemoteStart: int64(tp.RemoteStart()), UploadedEnd: int64(tp.UploadedEnd()), RemoteBytes: m.RemoteBytes(),
					RemoteSegments: len(m.Segments), LocalStart: int64(p.LocalLogStartOffset()), LocalBytes: p.Size()}
				d.Tiered = true
			}
		}
		d.Partitions = append(d.Partitions, row)
	}
	entries, err := b.DescribeConfigs(t.Name)
	if err != nil {
		return TopicDetail{}, err
	}
	for _, e := range entries {
		d.Configs = append(d.Configs, ConfigRow{Name: e.Name, Value: e.Value, Source: sourceName(e.Source)})
	}
	return d, nil
}

// dlqOf names t's dead-letter topic if t is validated (quarantines will
// create it) or the topic exists, and says whether it exists: every topic
// has a DLQ name by default, but an unvalidated topic's is no place to go.
func dlqOf(b *broker.Broker, t *broker.Topic) (name string, exists bool) {
	name = t.Config.DLQTopic(t.Name)
	_, err := b.Topic(name)
	if exists = err == nil; !exists && t.Config.Validator() == nil {
		return "", false
	}
	return name, exists
}

func int32s(ids []broker.NodeID) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

func sourceName(s broker.ConfigSource) string {
	switch s {
	case broker.SourceTopic:
		return "topic"
	case broker.SourceBroker:
		return "broker"
	default:
		return "default"
	}
}

func groupDetail(ctx context.Context, b *broker.Broker, h *lagHistory, id string) (GroupDetail, error) {
	g, err := b.GroupCoordinator(id)
	if err != nil {
		return GroupDetail{}, fmt.Errorf("%w: group %q: %v", errNotFound, id, err)
	}
	descs := g.Describe(ctx, []string{id})
	if len(descs) != 1 {
		return GroupDetail{}, fmt.Errorf("%w: group %q", errNotFound, id)
	}
	desc := descs[0]
	lag, err := b.GroupLag(ctx, id)
	if err != nil {
		return GroupDetail{}, err
	}
	var members []MemberRow
	d := GroupDetail{ID: id, State: desc.State.String(), ProtocolType: desc.ProtocolType, Protocol: desc.Protocol,
		TotalLag: lag.Total, MaxTimeLagSeconds: lag.MaxTimeLag.Seconds(), Members: []MemberRow{}, Lag: []LagRow{},
		LagHistory: h.get(id), Type: group.TypeClassic}
	switch {
	case desc.Code == group.CodeGroupIDNotFound: // not a classic group
		cd := g.ConsumerDescribe(ctx, []string{id})
		if len(cd) != 1 || cd[0].Group == nil {
			return GroupDetail{}, fmt.Errorf("%w: group %q", errNotFound, id)
		}
		members = consumerDetail(&d, cd[0])
	case desc.State == group.StateDead && len(lag.Partitions) == 0:
		return GroupDetail{}, fmt.Errorf("%w: group %q", errNotFound, id)
	default:
		for _, m := range desc.Members {
			members = append(members, MemberRow{ID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost,
				Assignment: assignment(desc.ProtocolType, m.Assignment)})
		}
	}
	owner := map[string]string{} // "topic-partition" → member
	for _, row := range members {
		for _, tp := range row.Assignment {
			for _, p := range tp.Partitions {
				owner[fmt.Sprintf("%s-%d", tp.Topic, p)] = row.ID
			}
		}
		d.Members = append(d.Members, row)
	}
	for _, p := range lag.Partitions {
		d.Lag = append(d.Lag, LagRow{Topic: p.Topic, Partition: int32(p.Partition), Committed: int64(p.Committed),
			End: int64(p.End), Lag: p.Lag, TimeLagSeconds: p.TimeLag.Seconds(), Member: owner[fmt.Sprintf("%s-%d", p.Topic, p.Partition)]})
		delete(owner, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
	}
	d.Lag = append(d.Lag, uncommitted(b, d.Members, owner)...)
	slices.SortFunc(d.Lag, func(a, b LagRow) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return d, nil
}

// uncommitted is the lag rows of partitions assigned (in left, by
// "topic-partition") on topics the group has committed nothing for: their
// lag is unknown (-1, shown "–", as kafka-consumer-groups shows it) — the
// consumer's auto.offset.reset decides where it starts — and not in the
// total, which stays the broker's GroupLag (the overview's and the
// metrics').
func uncommitted(b *broker.Broker, members []MemberRow, left map[string]string) []LagRow {
	var out []LagRow
	for _, m := range members {
		for _, tp := range m.Assignment {
			for _, p := range tp.Partitions {
				if left[fmt.Sprintf("%s-%d", tp.Topic, p)] == "" {
					continue
				}
				row := LagRow{Topic: tp.Topic, Partition: p, Committed: -1, End: -1, Lag: -1, Member: m.ID}
				if part, err := b.Partition(tp.Topic, broker.PartitionID(p)); err == nil {
					row.End = int64(part.HighWatermark())
				}
				out = append(out, row)
			}
		}
	}
	return out
}

// Brokers is the brokers page: the cluster as this node sees it.
type Brokers struct {
	ClusterID    string      `json:"cluster_id"`
	NodeID       int32       `json:"node_id"` // this node
	ControllerID int32       `json:"controller_id"`
	Clustered    bool        `json:"clustered"` // false: a single node, its own cluster
	Fenced       bool        `json:"fenced"`    // this node serves no partition
	Raft         *RaftView   `json:"raft,omitempty"`
	Brokers      []BrokerRow `json:"brokers"`
}

// RaftView is this node's part in the metadata quorum.
type RaftView struct {
	State       string `json:"state"`
	Term        uint64 `json:"term"`
	CommitIndex uint64 `json:"commit_index"`
	Applied     uint64 `json:"applied_index"`
}

// BrokerRow is one broker.
type BrokerRow struct {
	ID         int32  `json:"node_id"`
	Address    string `json:"address"`
	State      string `json:"state"`      // live or fenced
	Controller bool   `json:"controller"` // the active controller
	// Roles: "broker", "controller" or "broker,controller" (--roles).
	Roles string `json:"roles"`
	// PartitionsLed counts the partitions the metadata names it leader of;
	// Leads names them ("topic-partition"), sorted, at most 50.
	PartitionsLed int      `json:"partitions_led"`
	Leads         []string `json:"leads"`
}

// maxLeadsListed bounds the partitions a broker row names.
const maxLeadsListed = 50

func brokers(b *broker.Broker) Brokers {
	v := Brokers{ClusterID: b.ClusterID(), NodeID: int32(b.NodeID()), ControllerID: int32(b.ControllerID()),
		Clustered: b.Clustered(), Fenced: b.Fenced()}
	if rs, ok := b.RaftState(); ok {
		v.Raft = &RaftView{State: rs.State, Term: rs.Term, CommitIndex: rs.CommitIndex, Applied: rs.Applied}
	}
	led := map[broker.NodeID]int{}
	leads := map[broker.NodeID][]string{}
	for _, t := range b.Topics() {
		for i := range t.Partitions() {
			if l := b.PartitionInfo(t, broker.PartitionID(i)).Leader; l >= 0 {
				led[l]++
				if len(leads[l]) < maxLeadsListed {
					leads[l] = append(leads[l], fmt.Sprintf("%s-%d", t.Name, i))
				}
			}
		}
	}
	list := b.Brokers()
	if list == nil { // a single node
		list = []broker.BrokerInfo{{ID: b.NodeID()}}
	}
	for _, bi := range list {
		row := BrokerRow{ID: int32(bi.ID), State: "live", Controller: bi.ID == b.ControllerID(), PartitionsLed: led[bi.ID], Leads: leads[bi.ID],
			Roles: bi.RolesString()}
		if bi.Host != "" {
			row.Address = net.JoinHostPort(bi.Host, strconv.Itoa(int(bi.Port)))
		}
		if bi.Fenced {
			row.State = "fenced"
		}
		v.Brokers = append(v.Brokers, row)
	}
	return v
}

// consumerDetail fills d from a KIP-848 group's description and returns its
// members, sorted by id.
func consumerDetail(d *GroupDetail, cd group.ConsumerGroupDescription) []MemberRow {
	cg := cd.Group
	d.Type, d.ProtocolType, d.State = group.TypeConsumer, "consumer", cg.State().String()
	d.Epoch, d.AssignmentEpoch, d.Assignor = cg.Epoch, cg.AssignmentEpoch, cd.Assignor
	for _, r := range cd.History {
		d.Rebalances = append(d.Rebalances, RebalanceRow{Time: r.Time, Reason: r.Reason, Epoch: r.Epoch, Members: r.Members,
			Moved: r.Moved, MovedTo: r.MovedTo, HandedOver: r.HandedOver, MaxUnownedSeconds: r.MaxUnowned.Seconds()})
	}
	var out []MemberRow
	for _, id := range slices.Sorted(maps.Keys(cg.Members)) {
		m := cg.Members[id]
		out = append(out, MemberRow{ID: m.ID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost,
			Epoch: m.Epoch, Assignment: byTopic(m.Assigned), Target: byTopic(cg.Target[m.ID])})
	}
	return out
}

// byTopic groups sorted partitions by topic.
func byTopic(ps []assign.Partition) []TopicPartitions {
	out := []TopicPartitions{}
	for _, p := range ps {
		if len(out) == 0 || out[len(out)-1].Topic != p.Topic {
			out = append(out, TopicPartitions{Topic: p.Topic})
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, p.Partition)
	}
	return out
}
