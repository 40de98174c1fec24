package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-848 handlers over one raw connection: the wire translation (topic
// ids, v0 member ids, messages) and the answers of the APIs a
// consumer-protocol group changes (DescribeGroups, ListGroups, JoinGroup,
// OffsetCommit, OffsetFetch).

func TestConsumerGroupHeartbeatWire(t *testing.T) {
	t.Parallel()
	ts, c := groupServer(t)
	topic, err := ts.b.Topic("t")
	if err != nil {
		t.Fatal(err)
	}
	join := func(v int16, member string, assignor *string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "cg", member, 30_000
		req.SubscribedTopicNames, req.Topics, req.ServerAssignor = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, assignor
		return c.do(req, v).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	bad := "sticky"
	r := join(1, "m1", &bad)
	wantCode(t, "unknown assignor", r.ErrorCode, kerr.UnsupportedAssignor)
	if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "uniform") {
		t.Fatalf("unknown assignor message: %v", r.ErrorMessage)
	}
	rng := "range"
	r = join(1, "m1", &rng)
	wantCode(t, "join v1", r.ErrorCode, nil)
	if r.MemberID == nil || *r.MemberID != "m1" || r.MemberEpoch != 1 || r.HeartbeatIntervalMillis != 5000 || r.Assignment == nil ||
		len(r.Assignment.Topics) != 1 || r.Assignment.Topics[0].TopicID != [16]byte(topic.ID) || len(r.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("join v1: %+v", r)
	}
	// v0: the broker makes the member id.
	r = join(0, "", nil)
	wantCode(t, "join v0", r.ErrorCode, nil)
	if r.MemberID == nil || len(*r.MemberID) < 16 {
		t.Fatalf("join v0 member id: %v", r.MemberID)
	}
	// A heartbeat reporting owned partitions by topic id: m1 must give one
	// up to the v0 member.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "cg", "m1", 1, -1
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: [16]byte(topic.ID), Partitions: []int32{0, 1}}}
	r = c.do(hb, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
	wantCode(t, "heartbeat", r.ErrorCode, nil)
	if r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.Topics[0].Partitions) != 1 {
		t.Fatalf("revocation: %+v", r)
	}
	hb.MemberEpoch = 7
	wantCode(t, "future epoch", c.do(hb, 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.FencedMemberEpoch)
	hb.Group = "nope"
	wantCode(t, "unknown group", c.do(hb, 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.GroupIDNotFound)

	// ConsumerGroupDescribe: the group, an unknown one, a classic one.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "classic", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	wantCode(t, "simple commit", c.do(commit, 9).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	dr := kmsg.NewPtrConsumerGroupDescribeRequest()
	dr.Groups = []string{"cg", "nope", "classic"}
	d := c.do(dr, 1).(*kmsg.ConsumerGroupDescribeResponse)
	if len(d.Groups) != 3 || d.Groups[0].ErrorCode != 0 || d.Groups[0].AssignorName != "range" || len(d.Groups[0].Members) != 2 ||
		d.Groups[0].Members[0].MemberType != 1 || d.Groups[0].State != "Reconciling" {
		t.Fatalf("describe: %+v", d.Groups)
	}
	wantCode(t, "describe unknown", d.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "describe classic", d.Groups[2].ErrorCode, kerr.GroupIDNotFound)
	if d.Groups[2].ErrorMessage == nil || !strings.Contains(*d.Groups[2].ErrorMessage, "not a consumer group") {
		t.Fatalf("describe classic: %+v", d.Groups[2])
	}

	// DescribeGroups: Dead before v6, as Kafka answers v0-v5; v6
	// GROUP_ID_NOT_FOUND "Group cg is not a classic group.".
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"cg"}
	if g := c.do(dg, 5).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != 0 || g.State != "Dead" {
		t.Fatalf("DescribeGroups v5 of a consumer group: %+v", g)
	}
	if g := c.do(dg, 6).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code ||
		g.ErrorMessage == nil || *g.ErrorMessage != "Group cg is not a classic group." {
		t.Fatalf("DescribeGroups v6 of a consumer group: %+v", g)
	}

	// ListGroups: types and states.
	list := func(types, states []string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.TypesFilter, req.StatesFilter = types, states
		var out []string
		for _, g := range c.do(req, 5).(*kmsg.ListGroupsResponse).Groups {
			out = append(out, g.Group+"/"+g.GroupType+"/"+g.GroupState)
		}
		return out
	}
	if got := strings.Join(list(nil, nil), " "); got != "cg/consumer/Reconciling classic/classic/Empty" {
		t.Fatalf("list: %s", got)
	}
	if got := strings.Join(list([]string{"Consumer"}, nil), " "); got != "cg/consumer/Reconciling" {
		t.Fatalf("list consumer: %s", got)
	}
	if got := strings.Join(list(nil, []string{"empty"}), " "); got != "classic/classic/Empty" {
		t.Fatalf("list empty: %s", got)
	}

	// A classic member cannot join the live consumer group.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.MemberID, jg.ProtocolType, jg.SessionTimeoutMillis = "cg", "", "consumer", 10_000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	wantCode(t, "classic join", c.do(jg, 9).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)

	// Member commits and fetches: the version and the epoch are checked.
	commit.Group, commit.MemberID, commit.Generation = "cg", "m1", 1
	wantCode(t, "commit v8", c.do(commit, 8).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnsupportedVersion)
	wantCode(t, "commit v9", c.do(commit, 9).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	commit.Generation = 2
	wantCode(t, "commit ahead", c.do(commit, 9).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.StaleMemberEpoch)
	commit.Group = "nope"
	wantCode(t, "commit to no group", c.do(commit, 9).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	m1 := "m1"
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "cg", MemberID: &m1, MemberEpoch: 2}}
	wantCode(t, "fetch ahead", c.do(fetch, 9).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode, kerr.StaleMemberEpoch)
	fetch.Groups[0].MemberEpoch = 1
	f := c.do(fetch, 9).(*kmsg.OffsetFetchResponse).Groups[0]
	if f.ErrorCode != 0 || len(f.Topics) != 1 || f.Topics[0].Partitions[0].Offset != 1 {
		t.Fatalf("fetch: %+v", f)
	}
}
