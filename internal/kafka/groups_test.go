package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// The group API tests round-trip every advertised version of every group
// API through kmsg against the server, over one raw connection.

func groupServer(t *testing.T) (*testServer, *rawClient) {
	t.Helper()
	ts := startServer(t, broker.Config{GroupInitialRebalanceDelay: -1, DisableAutoCreateTopics: true}, Config{})
	createTopic(t, ts.b, "t", 2, nil)
	return ts, dial(t, ts.addr)
}

func TestGroupAPIsAdvertised(t *testing.T) {
	t.Parallel()
	_, c := groupServer(t)
	resp := c.do(kmsg.NewPtrApiVersionsRequest(), 3).(*kmsg.ApiVersionsResponse)
	want := map[int16][2]int16{8: {0, 9}, 9: {0, 9}, 10: {0, 6}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5},
		14: {0, 5}, 15: {0, 6}, 16: {0, 5}, 42: {0, 2}, 47: {0, 0}}
	for _, k := range resp.ApiKeys {
		if w, ok := want[k.ApiKey]; ok {
			if k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Errorf("%s: v%d-v%d, want v%d-v%d", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion, w[0], w[1])
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) > 0 {
		t.Errorf("not advertised: %v", want)
	}
}

func TestFindCoordinatorEveryVersion(t *testing.T) {
	t.Parallel()
	ts, c := groupServer(t)
	host, portStr, _ := net.SplitHostPort(ts.addr)
	port, _ := strconv.Atoi(portStr)
	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "g"
		req.CoordinatorKeys = []string{"g", "h"}
		resp := c.do(req, v).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != 0 || resp.Host != host || resp.Port != int32(port) {
				t.Fatalf("v%d: %+v", v, resp)
			}
		} else {
			if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "h" {
				t.Fatalf("v%d: %+v", v, resp.Coordinators)
			}
			for _, co := range resp.Coordinators {
				if co.ErrorCode != 0 || co.NodeID != 0 || co.Host != host || co.Port != int32(port) {
					t.Fatalf("v%d: %+v", v, co)
				}
			}
		}
		if v == 0 {
			continue
		}
		req.CoordinatorType = 1 // transaction
		resp = c.do(req, v).(*kmsg.FindCoordinatorResponse)
		code := resp.ErrorCode
		if v >= 4 {
			code = resp.Coordinators[0].ErrorCode
		}
		wantCode(t, fmt.Sprintf("v%d transaction coordinator", v), code, nil)
		req.CoordinatorType = 2 // share group: not served
		resp = c.do(req, v).(*kmsg.FindCoordinatorResponse)
		code = resp.ErrorCode
		if v >= 4 {
			code = resp.Coordinators[0].ErrorCode
		}
		wantCode(t, fmt.Sprintf("v%d share coordinator", v), code, kerr.InvalidRequest)
	}
}

// join runs JoinGroup at version v for a new member until it has a member
// id (MEMBER_ID_REQUIRED first from v4).
func join(t *testing.T, c *rawClient, v int16, groupID string) *kmsg.JoinGroupResponse {
	t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = groupID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte("sub")
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	resp := c.do(req, v).(*kmsg.JoinGroupResponse)
	if v >= 4 {
		wantCode(t, fmt.Sprintf("join v%d first", v), resp.ErrorCode, kerr.MemberIDRequired)
		if resp.MemberID == "" {
			t.Fatalf("join v%d: no member id with MEMBER_ID_REQUIRED", v)
		}
		req.MemberID = resp.MemberID
		resp = c.do(req, v).(*kmsg.JoinGroupResponse)
	}
	if resp.ErrorCode != 0 || resp.Generation != 1 || resp.LeaderID != resp.MemberID || len(resp.Members) != 1 ||
		resp.Protocol == nil || *resp.Protocol != "range" || string(resp.Members[0].ProtocolMetadata) != "sub" {
		t.Fatalf("join v%d: %v %+v", v, kerr.ErrorForCode(resp.ErrorCode), resp)
	}
	if v >= 7 && (resp.ProtocolType == nil || *resp.ProtocolType != "consumer") {
		t.Fatalf("join v%d: protocol type %v", v, resp.ProtocolType)
	}
	return resp
}

// TestGroupLifecycleEveryVersion joins, syncs, heartbeats, describes, lists
// and leaves a group at every advertised version.
func TestGroupLifecycleEveryVersion(t *testing.T) {
	t.Parallel()
	_, c := groupServer(t)
	for v := int16(0); v <= 9; v++ {
		gid := fmt.Sprintf("life-%d", v)
		j := join(t, c, v, gid)

		sv := min(v, 5)
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.Generation, sync.MemberID = gid, j.Generation, j.MemberID
		if sv >= 5 {
			pt, p := "consumer", "range"
			sync.ProtocolType, sync.Protocol = &pt, &p
		}
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = j.MemberID, []byte("assignment")
		sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{a}
		sr := c.do(sync, sv).(*kmsg.SyncGroupResponse)
		if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "assignment" {
			t.Fatalf("sync v%d: %v %q", sv, kerr.ErrorForCode(sr.ErrorCode), sr.MemberAssignment)
		}
		if sv >= 5 && (sr.Protocol == nil || *sr.Protocol != "range") {
			t.Fatalf("sync v%d: protocol %v", sv, sr.Protocol)
		}

		// A larger request on the same connection reuses (overwrites) the
		// frame buffer the JoinGroup and SyncGroup bytes were read into: the
		// coordinator must have copied the metadata and assignment.
		filler := kmsg.NewPtrMetadataRequest()
		for i := range 64 {
			rt := kmsg.NewMetadataRequestTopic()
			name := fmt.Sprintf("%s-%d", strings.Repeat("x", 60), i)
			rt.Topic = &name
			filler.Topics = append(filler.Topics, rt)
		}
		c.do(filler, 4)

		hv := min(v, 4)
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = gid, j.Generation, j.MemberID
		wantCode(t, fmt.Sprintf("heartbeat v%d", hv), c.do(hb, hv).(*kmsg.HeartbeatResponse).ErrorCode, nil)
		hb.Generation = j.Generation + 1
		wantCode(t, fmt.Sprintf("heartbeat v%d stale", hv), c.do(hb, hv).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)

		dv := min(v, 5)
		dr := kmsg.NewPtrDescribeGroupsRequest()
		dr.Groups = []string{gid, "nope"}
		d := c.do(dr, dv).(*kmsg.DescribeGroupsResponse)
		if len(d.Groups) != 2 || d.Groups[0].State != "Stable" || d.Groups[0].Protocol != "range" ||
			d.Groups[0].ProtocolType != "consumer" || len(d.Groups[0].Members) != 1 || d.Groups[1].State != "Dead" {
			t.Fatalf("describe v%d: %+v", dv, d.Groups)
		}
		m := d.Groups[0].Members[0]
		if m.MemberID != j.MemberID || m.ClientID != "test" || m.ClientHost != "/127.0.0.1" ||
			string(m.MemberAssignment) != "assignment" || string(m.ProtocolMetadata) != "sub" {
			t.Fatalf("describe v%d member: %+v", dv, m)
		}

		lv := min(v, 5)
		lr := kmsg.NewPtrListGroupsRequest()
		lr.StatesFilter = []string{"stable"}
		l := c.do(lr, lv).(*kmsg.ListGroupsResponse)
		if !slices.ContainsFunc(l.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return g.Group == gid && g.ProtocolType == "consumer" && (lv < 4 || g.GroupState == "Stable")
		}) {
			t.Fatalf("list v%d: %+v", lv, l.Groups)
		}

		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group, leave.MemberID = gid, j.MemberID
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = j.MemberID
		leave.Members = []kmsg.LeaveGroupRequestMember{lm}
		lvv := min(v, 5)
		lresp := c.do(leave, lvv).(*kmsg.LeaveGroupResponse)
		wantCode(t, fmt.Sprintf("leave v%d", lvv), lresp.ErrorCode, nil)
		if lvv >= 3 && (len(lresp.Members) != 1 || lresp.Members[0].ErrorCode != 0 || lresp.Members[0].MemberID != j.MemberID) {
			t.Fatalf("leave v%d: %+v", lvv, lresp.Members)
		}
		// Leaving again: unknown member.
		lresp = c.do(leave, lvv).(*kmsg.LeaveGroupResponse)
		code := lresp.ErrorCode
		if lvv >= 3 {
			code = lresp.Members[0].ErrorCode
		}
		wantCode(t, fmt.Sprintf("leave v%d again", lvv), code, kerr.UnknownMemberID)
		d = c.do(dr, dv).(*kmsg.DescribeGroupsResponse)
		if d.Groups[0].State != "Empty" || len(d.Groups[0].Members) != 0 {
			t.Fatalf("describe v%d after leave: %+v", dv, d.Groups[0])
		}
	}

	// ListGroups filters: unknown state, and v5 types.
	lr := kmsg.NewPtrListGroupsRequest()
	lr.StatesFilter = []string{"NoSuchState"}
	if l := c.do(lr, 4).(*kmsg.ListGroupsResponse); len(l.Groups) != 0 {
		t.Fatalf("unknown state filter: %+v", l.Groups)
	}
	lr.StatesFilter = nil
	lr.TypesFilter = []string{"consumer"}
	if l := c.do(lr, 5).(*kmsg.ListGroupsResponse); len(l.Groups) != 0 {
		t.Fatalf("type consumer: %+v", l.Groups)
	}
	lr.TypesFilter = []string{"Classic"}
	if l := c.do(lr, 5).(*kmsg.ListGroupsResponse); len(l.Groups) != 10 || l.Groups[0].GroupType != "classic" {
		t.Fatalf("type classic: %+v", l.Groups)
	}
}

func commitReq(group string, partitions map[int32]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	for _, p := range slices.Sorted(mapsKeys(partitions)) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		md := "md"
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, partitions[p], 3, &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	return req
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestOffsetsEveryVersion commits at every OffsetCommit version and fetches
// at every OffsetFetch version, including v8+'s multi-group form, then
// deletes offsets and groups.
func TestOffsetsEveryVersion(t *testing.T) {
	t.Parallel()
	_, c := groupServer(t)
	for v := int16(0); v <= 9; v++ {
		resp := c.do(commitReq(fmt.Sprintf("c-%d", v), map[int32]int64{0: 100 + int64(v)}), v).(*kmsg.OffsetCommitResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit v%d: %+v", v, resp.Topics)
		}
		// An unknown partition.
		resp = c.do(commitReq(fmt.Sprintf("c-%d", v), map[int32]int64{9: 1}), v).(*kmsg.OffsetCommitResponse)
		wantCode(t, fmt.Sprintf("commit v%d unknown partition", v), resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	}
	// A generation-checked commit to a group that does not exist.
	req := commitReq("c-0", map[int32]int64{0: 1})
	req.Generation, req.MemberID = 4, "ghost"
	resp := c.do(req, 5).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit from an unknown member", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)

	for commitV := int16(0); commitV <= 9; commitV++ {
		gid := fmt.Sprintf("c-%d", commitV)
		wantEpoch := int32(-1)
		if commitV >= 6 {
			wantEpoch = 3
		}
		for v := int16(0); v <= 9; v++ {
			check := func(offset int64, epoch int32, md *string, code int16, what string) {
				t.Helper()
				ep := int32(-1)
				if v >= 5 {
					ep = wantEpoch
				}
				if code != 0 || offset != 100+int64(commitV) || epoch != ep || md == nil || *md != "md" {
					t.Fatalf("fetch v%d of commit v%d %s: offset %d epoch %d md %v %v", v, commitV, what, offset, epoch, md, kerr.ErrorForCode(code))
				}
			}
			fr := kmsg.NewPtrOffsetFetchRequest()
			if v < 8 {
				fr.Group = gid
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic, rt.Partitions = "t", []int32{0, 1}
				fr.Topics = []kmsg.OffsetFetchRequestTopic{rt}
				r := c.do(fr, v).(*kmsg.OffsetFetchResponse)
				if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 {
					t.Fatalf("fetch v%d: %+v", v, r)
				}
				p0, p1 := r.Topics[0].Partitions[0], r.Topics[0].Partitions[1]
				check(p0.Offset, p0.LeaderEpoch, p0.Metadata, p0.ErrorCode, "partition 0")
				if p1.Offset != -1 || p1.ErrorCode != 0 {
					t.Fatalf("fetch v%d uncommitted partition: %+v", v, p1)
				}
				if v >= 2 { // null topics: all committed partitions
					fr.Topics = nil
					r = c.do(fr, v).(*kmsg.OffsetFetchResponse)
					if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
						t.Fatalf("fetch v%d all: %+v", v, r.Topics)
					}
					p0 = r.Topics[0].Partitions[0]
					check(p0.Offset, p0.LeaderEpoch, p0.Metadata, p0.ErrorCode, "all")
				}
				continue
			}
			g1 := kmsg.NewOffsetFetchRequestGroup()
			g1.Group = gid
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			g1.Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
			g2 := kmsg.NewOffsetFetchRequestGroup()
			g2.Group = "unknown-group"
			g2.Topics = g1.Topics
			g3 := kmsg.NewOffsetFetchRequestGroup()
			g3.Group = gid // Topics nil: all
			fr.Groups = []kmsg.OffsetFetchRequestGroup{g1, g2, g3}
			r := c.do(fr, v).(*kmsg.OffsetFetchResponse)
			if len(r.Groups) != 3 || r.Groups[0].Group != gid || r.Groups[1].Group != "unknown-group" {
				t.Fatalf("fetch v%d: %+v", v, r.Groups)
			}
			p := r.Groups[0].Topics[0].Partitions[0]
			check(p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode, "group 1")
			if p := r.Groups[1].Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 || r.Groups[1].ErrorCode != 0 {
				t.Fatalf("fetch v%d unknown group: %+v", v, r.Groups[1])
			}
			if len(r.Groups[2].Topics) != 1 || len(r.Groups[2].Topics[0].Partitions) != 1 {
				t.Fatalf("fetch v%d all: %+v", v, r.Groups[2])
			}
			p = r.Groups[2].Topics[0].Partitions[0]
			check(p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode, "group 3 (all)")
		}
	}

	// OffsetDelete v0.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "c-1"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "t"
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	od.Topics = []kmsg.OffsetDeleteRequestTopic{odt}
	odr := c.do(od, 0).(*kmsg.OffsetDeleteResponse)
	if odr.ErrorCode != 0 || len(odr.Topics) != 1 || odr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", odr)
	}
	od.Group = "never-existed"
	wantCode(t, "offset delete of an unknown group", c.do(od, 0).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.Group = "c-1"
	if r := c.do(fr, 7).(*kmsg.OffsetFetchResponse); len(r.Topics) != 0 {
		t.Fatalf("after offset delete: %+v", r.Topics)
	}

	// DeleteGroups v0-v2.
	for v := int16(0); v <= 2; v++ {
		dg := kmsg.NewPtrDeleteGroupsRequest()
		dg.Groups = []string{fmt.Sprintf("c-%d", v+2), "never-existed"}
		r := c.do(dg, v).(*kmsg.DeleteGroupsResponse)
		if len(r.Groups) != 2 || r.Groups[0].ErrorCode != 0 || r.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("delete groups v%d: %+v", v, r.Groups)
		}
		fr.Group = dg.Groups[0]
		if r := c.do(fr, 7).(*kmsg.OffsetFetchResponse); len(r.Topics) != 0 {
			t.Fatalf("after delete group v%d: %+v", v, r.Topics)
		}
	}
}

func TestDeleteInternalTopicRefused(t *testing.T) {
	t.Parallel()
	ts, c := groupServer(t)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{broker.ConsumerOffsetsTopic}
	resp := c.do(req, 5).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "delete __consumer_offsets", resp.Topics[0].ErrorCode, kerr.InvalidRequest)
	if _, err := ts.b.Topic(broker.ConsumerOffsetsTopic); err != nil {
		t.Fatal(err)
	}
}

// TestProduceToInternalTopicRefused: only the coordinator writes to
// __consumer_offsets; a record a client wrote there could fail its replay.
func TestProduceToInternalTopicRefused(t *testing.T) {
	t.Parallel()
	ts, c := groupServer(t)
	sp := producePartition(t, c.do(produceReq(broker.ConsumerOffsetsTopic, 0, batch(t, 2, -1, -1, -1)), 9))
	wantCode(t, "produce to __consumer_offsets", sp.ErrorCode, kerr.InvalidTopicException)
	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = broker.ConsumerOffsetsTopic
	drt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{drt}
	resp := c.do(dr, 2).(*kmsg.DeleteRecordsResponse)
	wantCode(t, "delete records of __consumer_offsets", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidTopicException)
	if _, err := ts.b.ProduceRecords(context.Background(), broker.ConsumerOffsetsTopic, 0, nil); !errors.Is(err, broker.ErrInvalidTopic) {
		t.Fatalf("in-process produce to __consumer_offsets: %v", err)
	}
	p, _ := ts.b.Partition(broker.ConsumerOffsetsTopic, 0)
	if p.LogEndOffset() != 0 {
		t.Fatalf("__consumer_offsets has %d records", p.LogEndOffset())
	}
}

// TestGroupBadInput: Kafka's error codes for invalid group ids, oversized
// commit metadata and bad session timeouts, with no state left behind.
func TestGroupBadInput(t *testing.T) {
	t.Parallel()
	_, c := groupServer(t)
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.ProtocolType, jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = "consumer", 10_000, 10_000
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	wantCode(t, "join with an empty group id", c.do(jr, 5).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidGroupID)
	jr.Group, jr.SessionTimeoutMillis = "g", 10
	wantCode(t, "join with a 10ms session", c.do(jr, 5).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)

	cr := commitReq("", map[int32]int64{0: 1})
	wantCode(t, "commit with an empty group id", c.do(cr, 8).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.InvalidGroupID)
	cr = commitReq("g", map[int32]int64{0: 1})
	big := strings.Repeat("m", 4097)
	cr.Topics[0].Partitions[0].Metadata = &big
	wantCode(t, "commit with 4097 bytes of metadata", c.do(cr, 8).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.OffsetMetadataTooLarge)

	fr := kmsg.NewPtrOffsetFetchRequest()
	wantCode(t, "fetch with an empty group id", c.do(fr, 7).(*kmsg.OffsetFetchResponse).ErrorCode, kerr.InvalidGroupID)
	fr.Group = "g"
	if r := c.do(fr, 7).(*kmsg.OffsetFetchResponse); r.ErrorCode != 0 || len(r.Topics) != 0 {
		t.Fatalf("fetch after failed commits: %+v", r)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", "nobody", 1
	wantCode(t, "heartbeat from an unknown member", c.do(hb, 4).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	sr := kmsg.NewPtrSyncGroupRequest()
	sr.Group, sr.MemberID, sr.Generation = "g", "nobody", 1
	wantCode(t, "sync from an unknown member", c.do(sr, 5).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
	lr := kmsg.NewPtrListGroupsRequest()
	if r := c.do(lr, 4).(*kmsg.ListGroupsResponse); len(r.Groups) != 0 {
		t.Fatalf("groups after bad input: %+v", r.Groups)
	}
}

// TestManyJoinsOneRebalance: 200 members joining at once (each on its own
// connection) complete one rebalance: one generation, one leader, who gets
// all 200 members.
func TestManyJoinsOneRebalance(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{GroupInitialRebalanceDelay: time.Second}, Config{})
	const n = 200
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = "crowd", "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30_000, 30_000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("m")}}
	clients := make([]*rawClient, n)
	corrs := make([]int32, n)
	for i := range clients {
		clients[i] = dial(t, ts.addr)
		corrs[i] = clients[i].send(req, 3) // v3: no MEMBER_ID_REQUIRED round trip
	}
	leaders := map[string]int{}
	for i, c := range clients {
		r := c.recv(req, corrs[i]).(*kmsg.JoinGroupResponse)
		if r.ErrorCode != 0 || r.Generation != 1 {
			t.Fatalf("member %d: %v generation %d", i, kerr.ErrorForCode(r.ErrorCode), r.Generation)
		}
		leaders[r.LeaderID]++
		if r.MemberID == r.LeaderID && len(r.Members) != n {
			t.Fatalf("leader got %d members", len(r.Members))
		}
	}
	if len(leaders) != 1 {
		t.Fatalf("%d distinct leaders", len(leaders))
	}
}

// TestSessionExpiryReassigns: a member that stops heartbeating is removed
// after its session timeout, and the group rebalances without it.
func TestSessionExpiryReassigns(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{GroupInitialRebalanceDelay: -1, GroupMinSessionTimeout: 10 * time.Millisecond}, Config{})
	c1, c2 := dial(t, ts.addr), dial(t, ts.addr)
	joinReq := func(memberID string) *kmsg.JoinGroupRequest {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.ProtocolType, r.MemberID = "expiring", "consumer", memberID
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 500, 10_000
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("m")}}
		return r
	}
	syncAll := func(gen int32, leader string, members map[string]*rawClient) {
		t.Helper()
		corrs := map[string]int32{}
		req := map[string]*kmsg.SyncGroupRequest{}
		for id, c := range members {
			if id == leader {
				continue // the leader syncs last
			}
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.Generation, r.MemberID = "expiring", gen, id
			req[id], corrs[id] = r, c.send(r, 3)
		}
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.Generation, r.MemberID = "expiring", gen, leader
		for other := range members {
			r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: other, MemberAssignment: []byte(other)})
		}
		req[leader], corrs[leader] = r, members[leader].send(r, 3)
		for id, c := range members {
			resp := c.recv(req[id], corrs[id]).(*kmsg.SyncGroupResponse)
			if resp.ErrorCode != 0 || string(resp.MemberAssignment) != id {
				t.Fatalf("sync gen %d %s: %v %q", gen, id, kerr.ErrorForCode(resp.ErrorCode), resp.MemberAssignment)
			}
		}
	}
	heartbeat := func(c *rawClient, gen int32, id string) int16 {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.Generation, r.MemberID = "expiring", gen, id
		return c.do(r, 3).(*kmsg.HeartbeatResponse).ErrorCode
	}

	j1 := c1.do(joinReq(""), 3).(*kmsg.JoinGroupResponse)
	if j1.ErrorCode != 0 || j1.Generation != 1 {
		t.Fatalf("first join: %v gen %d", kerr.ErrorForCode(j1.ErrorCode), j1.Generation)
	}
	syncAll(1, j1.MemberID, map[string]*rawClient{j1.MemberID: c1})

	// A second member joins; the first learns of it by heartbeat and rejoins.
	req2 := joinReq("")
	corr2 := c2.send(req2, 3)
	deadline := time.Now().Add(30 * time.Second)
	for heartbeat(c1, 1, j1.MemberID) != kerr.RebalanceInProgress.Code {
		if time.Now().After(deadline) {
			t.Fatal("no REBALANCE_IN_PROGRESS after a second member joined")
		}
		time.Sleep(20 * time.Millisecond) // the heartbeat interval
	}
	j1 = c1.do(joinReq(j1.MemberID), 3).(*kmsg.JoinGroupResponse)
	j2 := c2.recv(req2, corr2).(*kmsg.JoinGroupResponse)
	if j1.Generation != 2 || j2.Generation != 2 || j1.LeaderID != j2.LeaderID {
		t.Fatalf("second generation: %+v / %+v", j1, j2)
	}
	syncAll(2, j1.LeaderID, map[string]*rawClient{j1.MemberID: c1, j2.MemberID: c2})

	// Member 1 goes silent; member 2 keeps heartbeating until the group
	// rebalances without member 1.
	start := time.Now()
	for {
		code := heartbeat(c2, 2, j2.MemberID)
		if code == kerr.RebalanceInProgress.Code {
			break
		}
		if code != 0 || time.Now().After(deadline) {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
		}
		time.Sleep(50 * time.Millisecond) // the heartbeat interval
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Fatalf("member 1 removed after %v, before its 500ms session timeout", waited)
	}
	j2 = c2.do(joinReq(j2.MemberID), 3).(*kmsg.JoinGroupResponse)
	if j2.ErrorCode != 0 || j2.Generation != 3 || j2.LeaderID != j2.MemberID || len(j2.Members) != 1 {
		t.Fatalf("third generation: %v %+v", kerr.ErrorForCode(j2.ErrorCode), j2)
	}
	syncAll(3, j2.MemberID, map[string]*rawClient{j2.MemberID: c2})
	wantCode(t, "expired member's heartbeat", heartbeat(c1, 2, j1.MemberID), kerr.UnknownMemberID)
}
