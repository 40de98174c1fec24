package console

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/record"
)

// joinConsumer makes one consumer-protocol member of groupID, its own
// leader, and assigns it partitions of topic; it returns the member id.
func joinConsumer(t testing.TB, b *broker.Broker, groupID, topic string, partitions ...int32) string {
	t.Helper()
	ctx := context.Background()
	g, err := b.GroupCoordinator(groupID)
	if err != nil {
		t.Fatal(err)
	}
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	join := group.JoinRequest{GroupID: groupID, ClientID: "test-client", ClientHost: "/127.0.0.1", ProtocolType: "consumer",
		Protocols:      []group.Protocol{{Name: "range", Metadata: meta.AppendTo(nil)}},
		SessionTimeout: 30 * time.Second, RebalanceTimeout: 30 * time.Second}
	jr := g.Join(ctx, join)
	if jr.Code != group.CodeNone {
		t.Fatalf("join %s: %v", groupID, jr.Code)
	}
	a := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = topic, partitions
	a.Topics = append(a.Topics, at)
	sr := g.Sync(ctx, group.SyncRequest{GroupID: groupID, Generation: jr.Generation, MemberID: jr.MemberID,
		Assignments: []group.MemberAssignment{{MemberID: jr.MemberID, Assignment: a.AppendTo(nil)}}})
	if sr.Code != group.CodeNone {
		t.Fatalf("sync %s: %v", groupID, sr.Code)
	}
	return jr.MemberID
}

// TestGroupAssignmentAndTopicGroups: a group's page names the member that
// holds each partition, and a topic's page lists the groups reading it —
// by committed offsets (billing) or by assignment (readers).
func TestGroupAssignmentAndTopicGroups(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := f.b.Group("readers").CommitThrough(context.Background(), "orders", 1, 0); err != nil {
		t.Fatal(err)
	}
	member := joinConsumer(t, f.b, "readers", "orders", 1, 0)
	g := getJSON[GroupDetail](t, f, "/api/v1/groups/readers")
	if g.State != "Stable" || len(g.Members) != 1 || fmt.Sprint(g.Members[0].Assignment) != "[{orders [0 1]}]" {
		t.Fatalf("readers: %+v", g)
	}
	if len(g.Lag) != 2 || g.Lag[0].Member != member || g.Lag[1].Member != member || g.Lag[1].Lag != 1 {
		t.Errorf("readers' lag rows: %+v", g.Lag)
	}
	// A group that has committed nothing: its assigned partitions are
	// listed with their holder and an unknown lag, outside the total.
	fresh := joinConsumer(t, f.b, "fresh", "orders", 0)
	if g := getJSON[GroupDetail](t, f, "/api/v1/groups/fresh"); len(g.Lag) != 1 || g.Lag[0].Member != fresh ||
		g.Lag[0].Lag != -1 || g.Lag[0].Committed != -1 || g.Lag[0].End != 3 || g.TotalLag != 0 {
		t.Errorf("fresh: %+v", g)
	}
	if _, page := f.get(t, "/groups/fresh"); !strings.Contains(page, `<td class="num lag"><span class="muted" title="no committed offset`) {
		t.Errorf("fresh's page does not show the unknown lag as such:\n%s", page)
	}
	if b := getJSON[GroupDetail](t, f, "/api/v1/groups/billing"); len(b.Lag) != 2 || b.Lag[0].Member != "" || len(b.Members) != 0 {
		t.Errorf("billing has no members, so nobody holds its partitions: %+v", b)
	}
	d := getJSON[TopicDetail](t, f, "/api/v1/topics/orders")
	if _, page := f.get(t, "/topics/orders"); !strings.Contains(page, `<tr data-group="fresh"><td><a href="/groups/fresh">fresh</a></td><td>Stable</td><td class="num">1</td><td class="num">0</td><td class="num lag"><span class="muted"`) {
		t.Errorf("fresh's lag on orders is unknown, not 0:\n%s", page)
	}
	if fmt.Sprintf("%+v", d.Groups) != "[{ID:billing State:Empty Partitions:2 Lag:4 Members:0} {ID:fresh State:Stable Partitions:0 Lag:0 Members:1} {ID:readers State:Stable Partitions:2 Lag:4 Members:1}]" {
		t.Errorf("groups reading orders: %+v", d.Groups)
	}
	if e := getJSON[TopicDetail](t, f, "/api/v1/topics/events"); len(e.Groups) != 0 {
		t.Errorf("nobody reads events: %+v", e.Groups)
	}
	_, page := f.get(t, "/groups/readers")
	if !strings.Contains(page, `<td class="assignment"><a href="/topics/orders">orders</a> 0, 1</td>`) ||
		!strings.Contains(page, `<td class="data member">`+member+`</td>`) {
		t.Errorf("readers page lacks the assignment:\n%s", page)
	}
	if _, page := f.get(t, "/topics/orders"); !strings.Contains(page, `<tr data-group="readers"><td><a href="/groups/readers">readers</a></td><td>Stable</td><td class="num">1</td>`) {
		t.Errorf("orders page lacks its groups:\n%s", page)
	}
}

// TestLagHistory: the console's samples make the group's lag history and
// its chart; a group no longer listed is forgotten; a group keeps at most
// historyLen samples.
func TestLagHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, page := f.get(t, "/groups/billing"); !strings.Contains(page, `id="lag-chart-empty"`) {
		t.Errorf("no samples yet, but the page does not say so:\n%s", page)
	}
	f.c.sample(ctx)
	if _, err := f.b.ProduceRecords(ctx, "orders", 1, []record.Record{{Value: []byte("more")}, {Value: []byte("more")}}); err != nil {
		t.Fatal(err)
	}
	f.c.sample(ctx)
	g := getJSON[GroupDetail](t, f, "/api/v1/groups/billing")
	if len(g.LagHistory) != 2 || g.LagHistory[0].TotalLag != 4 || g.LagHistory[1].TotalLag != 6 || g.LagHistory[1].TimeMs < g.LagHistory[0].TimeMs {
		t.Fatalf("history: %+v", g.LagHistory)
	}
	_, page := f.get(t, "/groups/billing")
	if !strings.Contains(page, `<polyline`) || !strings.Contains(page, `max <span id="lag-chart-max">6</span>, now <span id="lag-chart-now">6</span>`) {
		t.Errorf("no chart:\n%s", page)
	}

	var h lagHistory
	for i := range historyLen + 10 {
		h.record(map[string]LagSample{"a": {TotalLag: int64(i)}, "b": {}})
	}
	if a := h.get("a"); len(a) != historyLen || a[0].TotalLag != 10 || a[historyLen-1].TotalLag != historyLen+9 {
		t.Errorf("a's history: %d samples from %d", len(a), a[0].TotalLag)
	}
	h.record(map[string]LagSample{"a": {}})
	if len(h.get("b")) != 0 || len(h.groups) != 1 {
		t.Errorf("b was not forgotten: %v", h.groups)
	}
}
