package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/strandmq/strand/internal/share"
)

// shareFixture makes "pickers" a share group with one member that holds
// orders-0's three records (acquired, not acknowledged), and returns the
// member's id.
func shareFixture(t *testing.T, f *fixture) string {
	t.Helper()
	n := f.b.Share()
	if n == nil {
		t.Fatal("the single-node broker hosts no share groups")
	}
	ctx := context.Background()
	if err := n.Coordinator.AlterConfigs(ctx, "pickers", map[string]*string{share.ConfigAutoOffsetReset: new("earliest")}, false); err != nil {
		t.Fatal(err)
	}
	member := "picker-1"
	if _, err := n.Coordinator.Heartbeat(ctx, share.HeartbeatRequest{Group: "pickers", MemberID: member, Topics: []string{"orders"}, ClientID: "picker"}); err != nil {
		t.Fatal(err)
	}
	topic, err := f.b.Topic("orders")
	if err != nil {
		t.Fatal(err)
	}
	tp := share.TopicPartition{TopicID: topic.ID, Topic: "orders", Partition: 0}
	got := n.Manager.Fetch(ctx, share.FetchSpec{Group: "pickers", Member: member, Partitions: []share.TopicPartition{tp}, MaxWait: time.Second})
	if len(got) != 1 || len(got[0].Ranges) != 1 || got[0].Ranges[0].Last != 2 {
		t.Fatalf("acquired %+v, want orders-0 offsets 0-2", got)
	}
	return member
}

// TestShareGroupDetail: the group API describes a share group: its type,
// members and their partitions, and per share-partition the in-flight
// window, the acquired records, the delivery counts and the oldest lock.
func TestShareGroupDetail(t *testing.T) {
	f := newFixture(t)
	member := shareFixture(t, f)
	resp, err := http.Get(f.srv.URL + "/api/v1/groups/pickers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d GroupDetail
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Type != "share" || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].ID != member {
		t.Fatalf("share group: %+v", d)
	}
	if a := d.Members[0].Assignment; len(a) != 1 || a[0].Topic != "orders" || len(a[0].Partitions) != 2 {
		t.Errorf("member assignment %+v, want orders 0, 1", a)
	}
	if len(d.SharePartitions) != 1 {
		t.Fatalf("share-partitions %+v, want orders-0", d.SharePartitions)
	}
	sp := d.SharePartitions[0]
	if sp.Partition != 0 || sp.InFlight != 3 || sp.Acquired != 3 || sp.Deliveries[1] != 3 || sp.ByMember[member] != 3 || sp.Start != 0 || sp.End != 3 {
		t.Errorf("orders-0: %+v, want 3 in flight, acquired once by %s", sp, member)
	}
}

// TestBrowserShareGroup: the group page of a share group shows its type,
// member and partitions, and each share-partition's in-flight count.
func TestBrowserShareGroup(t *testing.T) {
	f := newFixture(t)
	shareFixture(t, f)
	b := newBrowser(t)
	b.do(chromedp.Navigate(f.srv.URL + "/groups/pickers"))
	if typ, assigned := b.text(`#type`), b.text(`#members td.assignment`); typ != "share" || !strings.HasPrefix(assigned, "orders 0, 1") {
		t.Errorf("type %q, assignment %q", typ, assigned)
	}
	if inFlight, acquired := b.text(`#share-partitions tr[data-tp="orders-0"] td.in-flight`), b.text(`#share-partitions tr[data-tp="orders-0"] td.acquired`); inFlight != "3" || acquired != "3" {
		t.Errorf("orders-0 in flight %q, acquired %q; want 3 and 3", inFlight, acquired)
	}
	if n := b.count(`#lag`); n != 0 {
		t.Errorf("a share group's page shows a committed-offsets table")
	}
}
