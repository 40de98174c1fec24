package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a broker with data on disk behind a console on a real
// loopback listener: a topic "orders" with keyed records in two
// partitions, a tombstone and a binary value, a JSON-validated topic with
// one record quarantined to its DLQ, a validated topic "clean" that has
// quarantined nothing, and a group "billing" that committed
// part of "orders".
type fixture struct {
	b   *broker.Broker
	c   *Console
	srv *httptest.Server
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	b, err := broker.Open(broker.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), GroupInitialRebalanceDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	if _, err := b.CreateTopic(broker.TopicSpec{Name: "orders", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"apple", "banana", "cherry"} {
		recs := []record.Record{{Key: []byte("k" + v), Value: []byte(v), Timestamp: 1_700_000_000_000 + int64(i),
			Headers: []record.RecordHeader{{Key: "source", Value: []byte("test")}}}}
		if _, err := b.ProduceRecords(ctx, "orders", 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	more := []record.Record{{Key: []byte("gone"), Value: nil, Timestamp: 1}, {Key: nil, Value: []byte{0xff, 0x00, 0x10}, Timestamp: 2}}
	if _, err := b.ProduceRecords(ctx, "orders", 1, more); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic(broker.TopicSpec{Name: "events", Partitions: 1, Configs: map[string]string{broker.ConfigValidation: "json"}}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`{"ok":true}`, `not json`} {
		if _, err := b.ProduceRecords(ctx, "events", 0, []record.Record{{Value: []byte(v), Timestamp: 3}}); err != nil {
			t.Fatal(err)
		}
	}
	// "clean" is validated but has quarantined nothing: its DLQ does not
	// exist yet.
	if _, err := b.CreateTopic(broker.TopicSpec{Name: "clean", Partitions: 1, Configs: map[string]string{broker.ConfigValidation: "json"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Group("billing").CommitThrough(ctx, "orders", 0, 0); err != nil {
		t.Fatal(err)
	}
	c, err := New(b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return &fixture{b: b, c: c, srv: srv}
}

func (f *fixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func getJSON[T any](t *testing.T, f *fixture, path string) T {
	t.Helper()
	code, body := f.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	return v
}

// TestAPI reads every JSON endpoint and checks it against what the fixture
// wrote.
func TestAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	o := getJSON[Overview](t, f, "/api/v1/overview")
	byName := map[string]TopicRow{}
	for _, tr := range o.Topics {
		byName[tr.Name] = tr
	}
	if r := byName["orders"]; r.Partitions != 2 || r.Records != 5 || r.Bytes == 0 || r.CleanupPolicy != "delete" {
		t.Errorf("orders row: %+v", r)
	}
	if r := byName["orders"]; r.DLQ != "" || r.DLQExists {
		t.Errorf("orders is not validated and has no DLQ topic, yet its row names one: %+v", r)
	}
	if r := byName["clean"]; r.DLQ != "clean.dlq" || r.DLQExists {
		t.Errorf("clean's DLQ is named but does not exist yet: %+v", r)
	}
	if r := byName["events"]; r.Validation != "json" || r.DLQ != "events.dlq" || !r.DLQExists || r.Records != 2 {
		t.Errorf("events row: %+v (one accepted record and the quarantined one's gap)", r)
	}
	if r, ok := byName["events.dlq"]; !ok || r.Records != 1 {
		t.Errorf("dead-letter topic: %+v %v", r, ok)
	}
	if len(o.Groups) != 1 || o.Groups[0].ID != "billing" || o.Groups[0].Lag != 2+2 {
		t.Errorf("groups: %+v (committed orders-0 through 0: lag 2 there, 2 on orders-1)", o.Groups)
	}

	d := getJSON[TopicDetail](t, f, "/api/v1/topics/events")
	if d.Ingest.Validated != 2 || d.Ingest.Quarantined != 1 || d.DLQ != "events.dlq" || len(d.Partitions) != 1 {
		t.Errorf("events detail: %+v", d)
	}
	found := false
	for _, c := range d.Configs {
		found = found || c.Name == broker.ConfigValidation && c.Value == "json" && c.Source == "topic"
	}
	if !found {
		t.Errorf("configs lack strand.validation=json from the topic: %+v", d.Configs)
	}

	rs := getJSON[Records](t, f, "/api/v1/topics/orders/partitions/0/records?offset=1&limit=1")
	if rs.From != 1 || rs.Next != 2 || rs.End != 3 || len(rs.Records) != 1 || *rs.Records[0].Value != "banana" ||
		*rs.Records[0].Key != "kbanana" || len(rs.Records[0].Headers) != 1 || *rs.Records[0].Headers[0].Value != "test" {
		t.Errorf("one record from offset 1: %+v", rs)
	}
	rs = getJSON[Records](t, f, "/api/v1/topics/orders/partitions/1/records")
	if len(rs.Records) != 2 || rs.Records[0].Value != nil || rs.Records[1].Key != nil ||
		rs.Records[1].ValueEncoding != "base64" || *rs.Records[1].Value != "/wAQ" {
		t.Errorf("tombstone and binary value: %+v", rs.Records)
	}

	g := getJSON[GroupDetail](t, f, "/api/v1/groups/billing")
	if g.State != "Empty" || g.TotalLag != 4 || len(g.Lag) != 2 || g.Lag[0].Committed != 1 || g.Lag[1].Committed != -1 {
		t.Errorf("billing: %+v", g)
	}
	// The unread records carry 2023 (and 1970) timestamps: they have waited
	// for years.
	const year = 365 * 24 * 3600
	if g.Lag[0].TimeLagSeconds < year || g.MaxTimeLagSeconds < g.Lag[0].TimeLagSeconds {
		t.Errorf("billing time lag: partition 0 %vs, max %vs", g.Lag[0].TimeLagSeconds, g.MaxTimeLagSeconds)
	}
}

// TestErrors: unknown names are 404 and malformed queries 400, as JSON for
// the API and as a page for people, with the reason.
func TestErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v1/topics/nope", 404, `topic \"nope\"`},
		{"/topics/nope", 404, `topic &#34;nope&#34;`},
		{"/api/v1/topics/orders/partitions/9/records", 404, "orders-9"},
		{"/api/v1/topics/orders/partitions/x/records", 400, "not a partition number"},
		{"/api/v1/topics/orders/partitions/0/records?offset=-3", 400, "want an offset"},
		{"/topics/orders/partitions/0?limit=100000", 400, "want 1 to 500"},
		{"/api/v1/groups/nobody", 404, `group \"nobody\"`},
		{"/no/such/page", 404, "no page /no/such/page"},
		{"/api/v1/nope", 404, `"error": "not found: no API route GET /api/v1/nope`},
		{"/api/v1/topics/orders/nope", 404, `"error"`},
	} {
		code, body := f.get(t, tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %q; want %d with %q", tc.path, code, body, tc.code, tc.want)
		}
	}
}

// TestPagesEscape: record contents are data, not markup — in the value,
// the key, a header's key and a header's value alike.
func TestPagesEscape(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rec := record.Record{
		Key:       []byte("<script>key(1)</script>"),
		Value:     []byte("<script>alert(1)</script>"),
		Headers:   []record.RecordHeader{{Key: "<script>hkey(1)</script>", Value: []byte("<script>hval(1)</script>")}},
		Timestamp: 9,
	}
	if _, err := f.b.ProduceRecords(context.Background(), "orders", 0, []record.Record{rec}); err != nil {
		t.Fatal(err)
	}
	_, body := f.get(t, "/topics/orders/partitions/0?offset=3")
	if _, api := f.get(t, "/api/v1/topics/orders/partitions/0/records?offset=3"); strings.Contains(api, "<script") {
		t.Errorf("the records API serves raw markup (JSON's HTML escaping is off):\n%s", api)
	}
	for _, what := range []string{"alert", "key", "hkey", "hval"} {
		raw, escaped := "<script>"+what+"(1)</script>", "&lt;script&gt;"+what+"(1)&lt;/script&gt;"
		if strings.Contains(body, raw) || !strings.Contains(body, escaped) {
			t.Errorf("%s not escaped:\n%s", raw, body)
		}
	}
}

func TestHumanSeconds(t *testing.T) {
	t.Parallel()
	for s, want := range map[float64]string{0: "0s", -1: "0s", 0.85: "850ms", 12.34: "12.3s", 245: "4m05s", 12000: "3h20m"} {
		if got := humanSeconds(s); got != want {
			t.Errorf("humanSeconds(%v) = %q, want %q", s, got, want)
		}
	}
}

// TestOverviewShowsFailedPartitions: a partition fenced by a failed fsync
// is named on the overview page and in its JSON.
func TestOverviewShowsFailedPartitions(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	b, err := broker.Open(broker.Config{FS: fs, Dir: "/d", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close() // reports the fenced partition; not this test's concern
	if _, err := b.CreateTopic(broker.TopicSpec{Name: "durable", Partitions: 1, Configs: map[string]string{broker.ConfigFlushMessages: "1"}}); err != nil {
		t.Fatal(err)
	}
	fs.InjectError(vfs.ErrorOnce(vfs.OpSync, "durable-0/00000000000000000000.log", syscall.EIO))
	if _, err := b.ProduceRecords(context.Background(), "durable", 0, []record.Record{{Value: []byte("v")}}); err == nil {
		t.Fatal("produce with a failing fsync succeeded")
	}
	c, err := New(b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	f := &fixture{b: b, srv: srv}
	if o := getJSON[Overview](t, f, "/api/v1/overview"); len(o.FailedPartitions) != 1 || o.FailedPartitions[0] != "durable-0" {
		t.Fatalf("failed partitions %v", o.FailedPartitions)
	}
	if _, body := f.get(t, "/"); !strings.Contains(body, `id="failed"`) || !strings.Contains(body, "durable-0") {
		t.Fatalf("overview page lacks the warning:\n%s", body)
	}
}

// TestBrokersPage: a single node lists itself as the only broker and the
// controller, with the partitions it leads, as JSON and as a page.
func TestBrokersPage(t *testing.T) {
	f := newFixture(t)
	v := getJSON[Brokers](t, f, "/api/v1/brokers")
	// orders (2) + events (1) + events' DLQ (1) + clean (1) + __consumer_offsets (1)
	if v.Clustered || v.Fenced || v.Raft != nil || v.ControllerID != 0 || len(v.Brokers) != 1 ||
		!v.Brokers[0].Controller || v.Brokers[0].State != "live" || v.Brokers[0].PartitionsLed != 6 {
		t.Fatalf("brokers of a single node: %+v", v)
	}
	code, body := f.get(t, "/brokers")
	if code != http.StatusOK || !strings.Contains(body, `<tr data-node="0">`) || !strings.Contains(body, "a single node: no quorum") {
		t.Fatalf("brokers page: %d\n%s", code, body)
	}
}

// TestAPIIndex: /api/v1 lists the routes, /api/v1/topics and /api/v1/groups
// list what the overview does, and every route the index names answers
// JSON (a name in braces filled in from the fixture).
func TestAPIIndex(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, path := range []string{"/api/v1", "/api/v1/"} {
		idx := getJSON[map[string][]APIRoute](t, f, path)
		if len(idx["routes"]) < 9 {
			t.Fatalf("GET %s: %+v", path, idx)
		}
		for _, r := range idx["routes"] {
			topic := "orders"
			if strings.HasSuffix(r.Path, "/dlq") {
				topic = "events" // validated: it has dead letters
			}
			p := strings.NewReplacer("{topic}", topic, "{partition}", "0", "{group}", "billing", "{offset}", "1").Replace(r.Path)
			if code, body := f.get(t, p); code != http.StatusOK || !json.Valid([]byte(body)) {
				t.Errorf("index route %s: %d %s", p, code, body)
			}
		}
	}
	ts := getJSON[map[string][]TopicRow](t, f, "/api/v1/topics")["topics"]
	if len(ts) != 5 {
		t.Errorf("topics: %+v", ts)
	}
	gs := getJSON[map[string][]GroupRow](t, f, "/api/v1/groups")["groups"]
	if len(gs) != 1 || gs[0].ID != "billing" || gs[0].Lag != 4 {
		t.Errorf("groups: %+v", gs)
	}
	resp, err := http.Post(f.srv.URL+"/api/v1/overview", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" || !json.Valid(body) {
		t.Errorf("POST /api/v1/overview: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}
