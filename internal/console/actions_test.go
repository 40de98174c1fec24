package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// token reads the CSRF token from a page's action form, as a browser has it.
func (f *fixture) token(t *testing.T) string {
	t.Helper()
	_, body := f.get(t, "/topics/orders")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field on the topic page for a loopback client:\n%s", body)
	}
	return m[1]
}

// post submits a form without following the redirect; it returns the
// status, the Location and the body.
func (f *fixture) post(t *testing.T, path string, form url.Values, header http.Header) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, vs := range header {
		req.Header[k] = vs
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	_, _ = io.Copy(&body, resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), body.String()
}

// act posts a form with the token, as the console's own page would.
func (f *fixture) act(t *testing.T, path string, form url.Values) (int, string, string) {
	t.Helper()
	form.Set("csrf", f.token(t))
	return f.post(t, path, form, http.Header{"Origin": {f.srv.URL}, "Sec-Fetch-Site": {"same-origin"}})
}

// TestActionGuard: an action needs POST, a loopback client, no cross-site
// signs, and this process's token; a remote client sees no forms.
func TestActionGuard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tok := f.token(t)
	create := func(name string) url.Values { return url.Values{"name": {name}, "csrf": {tok}} }
	for _, tc := range []struct {
		name   string
		form   url.Values
		header http.Header
		want   string
	}{
		{"no token", url.Values{"name": {"t1"}}, nil, "CSRF token"},
		{"a wrong token", url.Values{"name": {"t2"}, "csrf": {strings.Repeat("0", 64)}}, nil, "CSRF token"},
		{"cross-site", create("t3"), http.Header{"Sec-Fetch-Site": {"cross-site"}}, "cross-site request cannot act"},
		{"same-site", create("t4"), http.Header{"Sec-Fetch-Site": {"same-site"}}, "same-site request cannot act"},
		{"another origin", create("t5"), http.Header{"Origin": {"http://evil.example"}}, "is not this console"},
		{"a null origin", create("t6"), http.Header{"Origin": {"null"}}, "is not this console"},
	} {
		code, _, body := f.post(t, "/actions/topics", tc.form, tc.header)
		if code != http.StatusForbidden || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d, want 403 with %q:\n%s", tc.name, code, tc.want, body)
		}
		if _, err := f.b.Topic(tc.form.Get("name")); err == nil {
			t.Errorf("%s: the topic was created", tc.name)
		}
	}
	if code, _ := f.get(t, "/actions/topics?name=t7&csrf="+tok); code == http.StatusSeeOther || code == http.StatusOK {
		t.Errorf("GET acted: %d", code)
	}
	// A client that is not on this machine: refused, and its pages carry
	// neither forms nor the token.
	req := httptest.NewRequest(http.MethodPost, "/actions/topics", strings.NewReader(create("t8").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = "192.0.2.7:40000"
	rec := httptest.NewRecorder()
	f.c.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "only from this machine") {
		t.Errorf("a remote client: %d %s", rec.Code, rec.Body)
	}
	for _, path := range []string{"/", "/topics/orders", "/groups/billing", "/topics/events/dlq"} {
		req = httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = "192.0.2.7:40000"
		rec = httptest.NewRecorder()
		f.c.ServeHTTP(rec, req)
		if rec.Code != 200 || strings.Contains(rec.Body.String(), tok) || strings.Contains(rec.Body.String(), `method="post"`) {
			t.Errorf("%s for a remote client: %d, token or form shown", path, rec.Code)
		}
	}
	// With everything right it acts.
	if code, loc, body := f.act(t, "/actions/topics", url.Values{"name": {"t9"}}); code != http.StatusSeeOther || loc != "/topics/t9" {
		t.Errorf("a good create: %d %q %s", code, loc, body)
	}
}

// TestTopicActions: create (and refuse a duplicate or a bad config),
// produce a test record, edit a config, delete only with the typed name.
func TestTopicActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, loc, body := f.act(t, "/actions/topics", url.Values{"name": {"made"}, "partitions": {"3"}, "configs": {"retention.ms=3600000\n\ncleanup.policy = compact"}})
	tp, err := f.b.Topic("made")
	if code != http.StatusSeeOther || loc != "/topics/made" || err != nil || tp.Partitions() != 3 {
		t.Fatalf("create: %d %q %v %s", code, loc, err, body)
	}
	if v, _ := tp.Config.Get(broker.ConfigCleanupPolicy); v != "compact" {
		t.Errorf("cleanup.policy %q", v)
	}
	for _, tc := range []struct {
		form url.Values
		code int
		want string
	}{
		{url.Values{"name": {"made"}}, 409, "exists"},
		{url.Values{"name": {"bad"}, "configs": {"retention.ms=soon"}}, 400, "retention.ms"},
		{url.Values{"name": {"bad"}, "configs": {"no equals sign"}}, 400, "not name=value"},
		{url.Values{"name": {"bad"}, "partitions": {"0"}}, 400, "partitions"},
		{url.Values{"name": {" "}}, 400, "needs a name"},
	} {
		if code, _, body := f.act(t, "/actions/topics", tc.form); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("create %v: %d, want %d with %q:\n%s", tc.form, code, tc.code, tc.want, body)
		}
	}

	code, loc, _ = f.act(t, "/actions/topics/made/produce", url.Values{"partition": {"2"}, "key": {"k"}, "value": {`{"n":1}`}, "headers": {"via=console"}})
	rs := getJSON[Records](t, f, "/api/v1/topics/made/partitions/2/records")
	if code != http.StatusSeeOther || loc != "/topics/made/partitions/2?offset=0" || len(rs.Records) != 1 ||
		*rs.Records[0].Key != "k" || *rs.Records[0].Value != `{"n":1}` || rs.Records[0].Headers[0].Key != "via" {
		t.Errorf("produce: %d %q %+v", code, loc, rs.Records)
	}
	if code, _, body := f.act(t, "/actions/topics/made/produce", url.Values{"partition": {"3"}}); code != 400 || !strings.Contains(body, "partitions 0 to 2") {
		t.Errorf("produce to partition 3 of 3: %d %s", code, body)
	}

	if code, _, body := f.act(t, "/actions/topics/made/config", url.Values{"name": {"retention.ms"}, "value": {"60000"}}); code != http.StatusSeeOther {
		t.Errorf("set config: %d %s", code, body)
	}
	tp, _ = f.b.Topic("made")
	if v, _ := tp.Config.Get("retention.ms"); v != "60000" {
		t.Errorf("retention.ms %q after set", v)
	}
	if code, _, body := f.act(t, "/actions/topics/made/config", url.Values{"name": {"retention.ms"}, "op": {"delete"}}); code != http.StatusSeeOther {
		t.Errorf("remove config: %d %s", code, body)
	}
	if d := getJSON[TopicDetail](t, f, "/api/v1/topics/made"); configSource(d, "retention.ms") != "default" {
		t.Errorf("retention.ms's source after removing the override: %q", configSource(d, "retention.ms"))
	}
	if code, _, body := f.act(t, "/actions/topics/made/config", url.Values{"name": {"no.such.config"}, "value": {"1"}}); code != 400 {
		t.Errorf("an unknown config: %d %s", code, body)
	}

	if code, _, body := f.act(t, "/actions/topics/made/delete", url.Values{"confirm": {"mad"}}); code != 400 || !strings.Contains(body, "type its name exactly") {
		t.Errorf("delete with a wrong confirmation: %d %s", code, body)
	}
	if _, err := f.b.Topic("made"); err != nil {
		t.Fatal("deleted without the typed name")
	}
	if code, loc, _ := f.act(t, "/actions/topics/made/delete", url.Values{"confirm": {"made"}}); code != http.StatusSeeOther || loc != "/" {
		t.Errorf("delete: %d %q", code, loc)
	}
	if _, err := f.b.Topic("made"); err == nil {
		t.Error("topic still there after delete")
	}
}

func configSource(d TopicDetail, name string) string {
	for _, c := range d.Configs {
		if c.Name == name {
			return c.Source
		}
	}
	return ""
}

// TestGroupActions: a reset is previewed first and changes nothing until
// applied, in each mode; a group with live members is refused; delete needs
// the typed id.
func TestGroupActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	committed := func(g string) string {
		var s []string
		for _, l := range getJSON[GroupDetail](t, f, "/api/v1/groups/"+g).Lag {
			s = append(s, fmt.Sprintf("%s-%d@%d", l.Topic, l.Partition, l.Committed))
		}
		return strings.Join(s, " ")
	}
	code, _, page := f.act(t, "/actions/groups/billing/reset", url.Values{"mode": {"earliest"}})
	if code != 200 || !strings.Contains(page, `<tr data-tp="orders-0"><td>orders</td><td class="num">0</td><td class="num current">1</td><td class="num target">0</td>`) ||
		!strings.Contains(page, `<input type="hidden" name="apply" value="1">`) {
		t.Errorf("preview: %d\n%s", code, page)
	}
	if got := committed("billing"); got != "orders-0@1 orders-1@-1" {
		t.Errorf("a preview changed offsets: %s", got)
	}
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"mode": {"latest"}}, "orders-0@3 orders-1@2"},
		{url.Values{"mode": {"earliest"}, "topic": {"orders"}}, "orders-0@0 orders-1@0"},
		{url.Values{"mode": {"timestamp"}, "value": {"2023-11-14T22:13:20.002Z"}}, "orders-0@2 orders-1@2"},
		{url.Values{"mode": {"offset"}, "value": {"1"}}, "orders-0@1 orders-1@1"},
		{url.Values{"mode": {"offset"}, "value": {"99"}}, "orders-0@3 orders-1@2"}, // clamped to the high watermarks
	} {
		tc.form.Set("apply", "1")
		if code, loc, body := f.act(t, "/actions/groups/billing/reset", tc.form); code != http.StatusSeeOther || loc != "/groups/billing" {
			t.Errorf("reset %v: %d %s", tc.form, code, body)
		}
		if got := committed("billing"); got != tc.want {
			t.Errorf("reset %v: %s, want %s", tc.form, got, tc.want)
		}
	}
	if code, _, body := f.act(t, "/actions/groups/billing/reset", url.Values{"mode": {"sideways"}}); code != 400 || !strings.Contains(body, "want earliest") {
		t.Errorf("a bad mode: %d %s", code, body)
	}

	joinConsumer(t, f.b, "readers", "orders", 0, 1)
	if code, _, body := f.act(t, "/actions/groups/readers/reset", url.Values{"mode": {"latest"}, "topic": {"orders"}, "apply": {"1"}}); code != 409 || !strings.Contains(body, "stop its consumers") {
		t.Errorf("reset of a group with members: %d %s", code, body)
	}
	if code, _, body := f.act(t, "/actions/groups/readers/delete", url.Values{"confirm": {"readers"}}); code != 409 {
		t.Errorf("delete a group with members: %d %s", code, body)
	}
	if code, _, _ := f.act(t, "/actions/groups/billing/delete", url.Values{"confirm": {"bill"}}); code != 400 {
		t.Errorf("delete with a wrong confirmation: %d", code)
	}
	if code, loc, body := f.act(t, "/actions/groups/billing/delete", url.Values{"confirm": {"billing"}}); code != http.StatusSeeOther || loc != "/" {
		t.Errorf("delete: %d %q %s", code, loc, body)
	}
	if code, _ := f.get(t, "/api/v1/groups/billing"); code != 404 {
		t.Errorf("billing after delete: %d", code)
	}
}

// TestDLQActions: dead letters by reason; a dry run counts what a redrive
// would do and writes nothing; the redrive does it.
func TestDLQActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A second poison record, with another reason.
	if _, err := f.b.ProduceRecords(context.Background(), "events", 0, []record.Record{{Value: []byte(`[1,`)}}); err != nil {
		t.Fatal(err)
	}
	v := getJSON[DLQView](t, f, "/api/v1/topics/events/dlq")
	if v.DLQ != "events.dlq" || v.Total != 2 || len(v.Reasons) == 0 || len(v.Scanned) != 1 || v.Scanned[0].To != 2 {
		t.Fatalf("events' dead letters: %+v", v)
	}
	n := 0
	for _, r := range v.Reasons {
		n += r.Count
		if r.Reason == "" || len(r.Records) != r.Count {
			t.Errorf("reason row %+v", r)
		}
	}
	if n != 2 || v.Reasons[0].Records[0].Topic != "events.dlq" {
		t.Errorf("reasons: %+v", v.Reasons)
	}
	if code, _ := f.get(t, "/api/v1/topics/orders/dlq"); code != 404 {
		t.Errorf("orders is not validated: its DLQ view is %d", code)
	}
	if c := getJSON[DLQView](t, f, "/api/v1/topics/clean/dlq"); c.DLQ != "clean.dlq" || len(c.Reasons) != 0 {
		t.Errorf("clean has quarantined nothing: %+v", c)
	}

	if _, page := f.get(t, "/topics/events/dlq"); !strings.Contains(page, `<span id="dlq-total">2 records</span> from events among offsets 0–1 of partition 0`) {
		t.Errorf("dead letters page:\n%s", page)
	}
	code, _, page := f.act(t, "/actions/topics/events/redrive", url.Values{"dryRun": {"1"}})
	if code != 200 || !strings.Contains(page, "Dry run — nothing was written: 0 would be redriven, 2 still invalid, 0 already done") {
		t.Errorf("dry run under json validation: %d\n%s", code, page)
	}
	if err := f.b.IncrementalAlterConfigs("events", []broker.ConfigChange{{Name: broker.ConfigValidation, Op: broker.OpSet, Value: "none"}}, false); err != nil {
		t.Fatal(err)
	}
	before := getJSON[Records](t, f, "/api/v1/topics/events/partitions/0/records").End
	_, _, page = f.act(t, "/actions/topics/events/redrive", url.Values{"dryRun": {"1"}})
	if !strings.Contains(page, "2 would be redriven, 0 still invalid") {
		t.Errorf("dry run without validation:\n%s", page)
	}
	if after := getJSON[Records](t, f, "/api/v1/topics/events/partitions/0/records").End; after != before {
		t.Fatalf("the dry run wrote: high watermark %d → %d", before, after)
	}
	code, _, page = f.act(t, "/actions/topics/events/redrive", url.Values{"dryRun": {"0"}})
	if code != 200 || !strings.Contains(page, "Redriven 2, 0 still invalid, 0 already done") {
		t.Errorf("redrive: %d\n%s", code, page)
	}
	if after := getJSON[Records](t, f, "/api/v1/topics/events/partitions/0/records").End; after != before+2 {
		t.Errorf("redrive wrote %d records, want 2", after-before)
	}
	if _, _, page = f.act(t, "/actions/topics/events/redrive", url.Values{"dryRun": {"1"}}); !strings.Contains(page, "0 would be redriven, 0 still invalid, 2 already done") {
		t.Errorf("dry run after the redrive:\n%s", page)
	}
}
