package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// describeReq is a DescribeTopicPartitions request for topics with a
// partition limit and an optional cursor.
func describeReq(limit int32, cursor *kmsg.DescribeTopicPartitionsResponseNextCursor, topics ...string) *kmsg.DescribeTopicPartitionsRequest {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = limit
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	if cursor != nil {
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: cursor.Topic, Partition: cursor.Partition}
	}
	return req
}

// described lists a response's partitions as "topic/partition".
func described(resp *kmsg.DescribeTopicPartitionsResponse) []string {
	var out []string
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out = append(out, fmt.Sprintf("%s/%d", *rt.Topic, p.Partition))
		}
	}
	return out
}

// TestDescribeTopicPartitions: topics by name in name order, each
// partition as Metadata describes it with empty ELR fields on a single
// node; unknown and illegal names answered per topic.
func TestDescribeTopicPartitions(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	beta := createTopic(t, ts.b, "beta", 3, nil)
	alpha := createTopic(t, ts.b, "alpha", 2, nil)
	c := dial(t, ts.addr)

	resp := c.do(describeReq(2000, nil, "beta", "nope", "alpha", "bad name!", "beta"), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if resp.NextCursor != nil {
		t.Errorf("next cursor %+v, want none", *resp.NextCursor)
	}
	var names []string
	for _, rt := range resp.Topics {
		names = append(names, *rt.Topic)
	}
	if want := []string{"alpha", "bad name!", "beta", "nope"}; !slices.Equal(names, want) {
		t.Fatalf("topics %v, want %v", names, want)
	}
	wantCode(t, "illegal name", resp.Topics[1].ErrorCode, kerr.InvalidTopicException)
	wantCode(t, "unknown topic", resp.Topics[3].ErrorCode, kerr.UnknownTopicOrPartition)
	for _, i := range []int{1, 3} {
		if rt := resp.Topics[i]; rt.TopicID != [16]byte{} || len(rt.Partitions) != 0 {
			t.Errorf("%s: id %x, %d partitions; want none", *rt.Topic, rt.TopicID, len(rt.Partitions))
		}
	}
	for i, want := range map[int]*broker.Topic{0: alpha, 2: beta} {
		rt := resp.Topics[i]
		wantCode(t, want.Name, rt.ErrorCode, nil)
		if rt.TopicID != want.ID || rt.IsInternal || len(rt.Partitions) != int(want.Partitions()) {
			t.Errorf("%s: id %x internal %v, %d partitions; want id %x, %d", want.Name, rt.TopicID, rt.IsInternal, len(rt.Partitions), want.ID, want.Partitions())
		}
		for j, p := range rt.Partitions {
			node := int32(ts.b.NodeID())
			info := ts.b.PartitionInfo(want, broker.PartitionID(j))
			if p.Partition != int32(j) || p.ErrorCode != 0 || p.LeaderID != node || p.LeaderEpoch != info.LeaderEpoch ||
				!slices.Equal(p.Replicas, []int32{node}) || !slices.Equal(p.ISR, []int32{node}) {
				t.Errorf("%s/%d: %+v, want led by %d (epoch %d), replicas = ISR = [%d]", want.Name, j, p, node, info.LeaderEpoch, node)
			}
			if len(p.EligibleLeaderReplicas)+len(p.LastKnownELR)+len(p.OfflineReplicas) != 0 {
				t.Errorf("%s/%d: ELR %v, last known %v, offline %v on a single node; want all empty", want.Name, j, p.EligibleLeaderReplicas, p.LastKnownELR, p.OfflineReplicas)
			}
		}
	}

	// A negative cursor partition starts the topic at 0.
	resp = c.do(describeReq(10, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "beta", Partition: -5000}, "beta"), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if got := described(resp); !slices.Equal(got, []string{"beta/0", "beta/1", "beta/2"}) || resp.NextCursor != nil {
		t.Errorf("cursor at beta/-5000: %v next %+v; want every partition of beta", got, resp.NextCursor)
	}

	// A cursor must name a listed topic: INVALID_REQUEST on each.
	resp = c.do(describeReq(10, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "gamma"}, "alpha", "beta"), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("cursor outside the list: %d topics, want 2", len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		wantCode(t, "cursor outside the list: "+*rt.Topic, rt.ErrorCode, kerr.InvalidRequest)
	}
}

// TestDescribeTopicPartitionsPages: a small partition limit pages through
// two topics, each cursor the first partition left out, and through every
// topic when none is named.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "beta", 3, nil)
	createTopic(t, ts.b, "alpha", 2, nil)
	c := dial(t, ts.addr)

	type page struct {
		parts []string
		next  *kmsg.DescribeTopicPartitionsResponseNextCursor
	}
	cur := func(topic string, p int32) *kmsg.DescribeTopicPartitionsResponseNextCursor {
		return &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: topic, Partition: p}
	}
	for _, tc := range []struct {
		limit int32
		want  []page
	}{
		{2, []page{ // the limit ends at a topic boundary: the next topic at 0
			{[]string{"alpha/0", "alpha/1"}, cur("beta", 0)},
			{[]string{"beta/0", "beta/1"}, cur("beta", 2)},
			{[]string{"beta/2"}, nil},
		}},
		{3, []page{
			{[]string{"alpha/0", "alpha/1", "beta/0"}, cur("beta", 1)},
			{[]string{"beta/1", "beta/2"}, nil},
		}},
		{5000, []page{{[]string{"alpha/0", "alpha/1", "beta/0", "beta/1", "beta/2"}, nil}}},
		{0, []page{{nil, cur("alpha", 0)}}},
	} {
		var cursor *kmsg.DescribeTopicPartitionsResponseNextCursor
		for i, want := range tc.want {
			resp := c.do(describeReq(tc.limit, cursor, "beta", "alpha"), 0).(*kmsg.DescribeTopicPartitionsResponse)
			got := page{described(resp), resp.NextCursor}
			if !slices.Equal(got.parts, want.parts) || (got.next == nil) != (want.next == nil) ||
				got.next != nil && (got.next.Topic != want.next.Topic || got.next.Partition != want.next.Partition) {
				t.Fatalf("limit %d, page %d: %v next %+v; want %v next %+v", tc.limit, i, got.parts, got.next, want.parts, want.next)
			}
			cursor = resp.NextCursor
		}
	}

	// Every topic, one partition a page, ends with the same list as all at once.
	var all []string
	for _, tp := range ts.b.Topics() {
		for p := range tp.Partitions() {
			all = append(all, fmt.Sprintf("%s/%d", tp.Name, p))
		}
	}
	var paged []string
	var cursor *kmsg.DescribeTopicPartitionsResponseNextCursor
	for i := 0; ; i++ {
		if i > len(all) {
			t.Fatalf("paging every topic did not end after %d pages: %v", i, paged)
		}
		resp := c.do(describeReq(1, cursor), 0).(*kmsg.DescribeTopicPartitionsResponse)
		paged = append(paged, described(resp)...)
		if cursor = resp.NextCursor; cursor == nil {
			break
		}
	}
	if !slices.Equal(paged, all) || len(all) < 5 {
		t.Errorf("every topic a partition at a time: %v, want %v", paged, all)
	}
}

// FuzzDescribeTopicPartitions runs whatever decodes as a request through
// the handler of a real broker: it must not panic, must keep to the
// partition limit, and its answer must encode. The broker's background
// loops make coverage vary between runs of one input, which sends the
// fuzzer into long minimizations: run it with -fuzzminimizetime 100x.
func FuzzDescribeTopicPartitions(f *testing.F) {
	ts := startServer(f, broker.Config{}, Config{})
	createTopic(f, ts.b, "alpha", 2, nil)
	createTopic(f, ts.b, "beta", 3, nil)
	for _, req := range []*kmsg.DescribeTopicPartitionsRequest{
		describeReq(2000, nil),
		describeReq(2, nil, "alpha", "beta", "nope"),
		describeReq(1, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "beta", Partition: 2}, "beta"),
		describeReq(-1, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "alpha", Partition: -7}),
		describeReq(3, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "alpha", Partition: 1<<31 - 1}, "alpha"),
	} {
		f.Add(req.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		if err := req.ReadFrom(body); err != nil {
			return // the frame parser refuses it; FuzzRequest covers that path
		}
		kresp, err := ts.s.handleDescribeTopicPartitions(context.Background(), req)
		if err != nil {
			t.Fatalf("handler error %v: DescribeTopicPartitions answers every request", err)
		}
		resp := kresp.(*kmsg.DescribeTopicPartitionsResponse)
		if n, limit := len(described(resp)), min(req.ResponsePartitionLimit, maxDescribePartitions); n > int(max(limit, 0)) {
			t.Fatalf("%d partitions described, limit %d", n, limit)
		}
		_ = resp.AppendTo(nil)
	})
}
