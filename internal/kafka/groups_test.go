package kafka

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

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
		14: {0, 5}, 15: {0, 5}, 16: {0, 5}, 42: {0, 2}, 47: {0, 0}}
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
		wantCode(t, fmt.Sprintf("v%d transaction coordinator", v), code, kerr.InvalidRequest)
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
