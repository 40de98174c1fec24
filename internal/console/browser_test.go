package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/strandmq/strand/internal/record"
)

// chromium finds a Chromium to drive, or skips (fails, when CI requires the
// browser with STRAND_REQUIRE_BROWSER=1: .ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("STRAND_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH and STRAND_REQUIRE_BROWSER is set")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// TestBrowser walks the console in headless Chromium the way a person
// would: the overview lists the topic and the group's lag, a click opens the
// topic and its partitions, another browses a partition's records from the
// log start, paging on, and the group page shows the lag per partition.
func TestBrowser(t *testing.T) {
	b := newBrowser(t)
	f := newFixture(t)
	b.do(chromedp.Navigate(f.srv.URL + "/"))
	ordersRow := b.text(`tr[data-topic="orders"]`)
	groupRow := b.text(`tr[data-group="billing"]`)
	// No dead links: "orders" is not validated (no DLQ cell link), "clean"
	// has quarantined nothing yet (named, not linked), "events" links to
	// its DLQ's page.
	if n := b.count(`tr[data-topic="orders"] td.dlq a, tr[data-topic="clean"] td.dlq a`); n != 0 {
		t.Errorf("%d dead-letter links where no DLQ topic exists", n)
	}
	b.follow(`tr[data-topic="events"] td.dlq a`)
	if name := b.text(`#topic-name`); name != "events.dlq" {
		t.Errorf("events' DLQ link opened %q", name)
	}
	b.do(chromedp.Navigate(f.srv.URL + "/"))
	b.follow(`tr[data-topic="orders"] a`)
	topicName := b.text(`#topic-name`)
	b.follow(`tr[data-partition="0"] a.browse`)
	firstValue := b.text(`tr[data-offset="0"] td.value`)
	key := b.text(`tr[data-offset="2"] td.key`)
	if fields := strings.Fields(ordersRow); len(fields) < 3 || fields[0] != "orders" || fields[1] != "2" || fields[2] != "5" {
		t.Errorf("overview row for orders: %q (want 2 partitions, 5 records)", ordersRow)
	}
	if !strings.HasPrefix(groupRow, "billing") || !strings.HasSuffix(strings.TrimSpace(groupRow), "4") {
		t.Errorf("overview row for billing: %q (want lag 4)", groupRow)
	}
	if topicName != "orders" || firstValue != "apple" || key != "kcherry" {
		t.Errorf("topic %q, first value %q, key at offset 2 %q", topicName, firstValue, key)
	}

	// Replay by seek, in the address bar: a page of one record from offset
	// 1, then "next page".
	b.do(chromedp.Navigate(f.srv.URL + "/topics/orders/partitions/0?offset=1&limit=1"))
	b.follow(`#next`)
	pageFrom := b.text(`#from`)
	nextValue := b.text(`tr[data-offset="2"] td.value`)
	if pageFrom != "2" || nextValue != "cherry" {
		t.Errorf("next page from %q shows %q; want offset 2, cherry", pageFrom, nextValue)
	}
	b.do(chromedp.Navigate(f.srv.URL + "/groups/billing"))
	totalLag := b.text(`#total-lag`)
	lagRow := b.text(`tr[data-tp="orders-1"]`)
	if totalLag != "4" || !strings.Contains(lagRow, "none") || !strings.HasSuffix(strings.TrimSpace(lagRow), "2") {
		t.Errorf("group page: total lag %q, orders-1 row %q", totalLag, lagRow)
	}
}

// TestBrowserRecords walks the records pages: a seek by timestamp from the
// form, previous and last pages, a filter and what it scanned, a
// quarantined gap's link to its DLQ record, an indented JSON value, a long
// value's link to the whole, and the all-partitions view.
func TestBrowserRecords(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("x", maxValueShown+10)
	if _, err := f.b.ProduceRecords(context.Background(), "orders", 0, []record.Record{{Value: []byte(long), Timestamp: 1_800_000_000_000}}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(chromedp.Navigate(f.srv.URL + "/topics/orders/partitions/0?limit=1"))
	b.do(chromedp.SetValue(chromedp.CSS(`#seek-form input[name="timestamp"]`), "2023-11-14T22:13:20.002Z"))
	b.submit(`#seek-form`)
	if from, v := b.text(`#from`), b.text(`tr[data-offset="2"] td.value`); from != "2" || v != "cherry" {
		t.Errorf("seek to a timestamp: from %q value %q", from, v)
	}
	b.follow(`#prev`)
	if from := b.text(`#from`); from != "1" {
		t.Errorf("previous page from %q", from)
	}
	b.follow(`#last`)
	if from := b.text(`#from`); from != "3" {
		t.Errorf("last page from %q", from)
	}
	if v := b.text(`tr[data-offset="3"] td.value`); !strings.HasSuffix(v, fmt.Sprintf("whole value (%s)", humanBytes(int64(len(long))))) {
		t.Errorf("long value cell ends %q", v[max(0, len(v)-40):])
	}
	b.follow(`tr[data-offset="3"] a.whole`)
	if body := b.text(`body`); body != long {
		t.Errorf("whole value: %d bytes", len(body))
	}

	b.do(chromedp.Navigate(f.srv.URL + "/topics/orders/partitions/0"))
	b.do(chromedp.SetValue(chromedp.CSS(`#seek-form input[name="value"]`), "an"))
	b.submit(`#seek-form`)
	if scanned, n := b.text(`#scanned`), b.count(`#records tr[data-offset]`); !strings.Contains(scanned, "scanned offsets 0–3 of 0–4") || n != 1 {
		t.Errorf("filter value~an: %q, %d rows (want banana only)", scanned, n)
	}

	b.do(chromedp.Navigate(f.srv.URL + "/topics/events/partitions/0"))
	if j := b.text(`tr[data-offset="0"] td.value pre.json`); j != "{\n  \"ok\": true\n}" {
		t.Errorf("JSON value shown as %q", j)
	}
	b.follow(`tr.gap a.dlq-link`)
	if v := b.text(`tr[data-offset="0"] td.value`); v != "not json" {
		t.Errorf("the gap's DLQ record: %q", v)
	}

	// Live tail: a record produced after the page loaded appears on its own.
	b.do(chromedp.Navigate(f.srv.URL + "/topics/orders/partitions/0?limit=2"))
	b.follow(`#tail`)
	if _, err := f.b.ProduceRecords(context.Background(), "orders", 0, []record.Record{{Value: []byte("tailed")}}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.WaitVisible(chromedp.CSS(`tr[data-offset="4"]`)))
	if v := b.text(`tr[data-offset="4"] td.value`); v != "tailed" {
		t.Errorf("live tail shows %q", v)
	}

	b.do(chromedp.Navigate(f.srv.URL + "/topics/orders"))
	b.follow(`#all-records`)
	if first, n := b.text(`#records tbody tr:first-child td.data.key`), b.count(`#records tr[data-po]`); first != "gone" || n != 7 {
		t.Errorf("all partitions: first key %q (want orders-1's 1970 tombstone), %d rows", first, n)
	}
}

// TestBrowserGroups: from a topic's page to a group reading it; the group
// page shows who holds which partition and the lag chart.
func TestBrowserGroups(t *testing.T) {
	f := newFixture(t)
	member := joinConsumer(t, f.b, "readers", "orders", 0, 1)
	if err := f.b.Group("billing").CommitThrough(context.Background(), "orders", 1, 0); err != nil {
		t.Fatal(err)
	}
	f.c.sample(context.Background())
	f.c.sample(context.Background())
	b := newBrowser(t)
	b.do(chromedp.Navigate(f.srv.URL + "/topics/orders"))
	if row := b.text(`#topic-groups tr[data-group="billing"]`); !strings.HasSuffix(row, "3") {
		t.Errorf("billing on the orders page: %q (want lag 3)", row)
	}
	b.follow(`#topic-groups tr[data-group="readers"] a`)
	if id, assigned := b.text(`#group-id`), b.text(`#members td.assignment`); id != "readers" || assigned != "orders 0, 1" {
		t.Errorf("group %q, assignment %q", id, assigned)
	}
	if m, lag := b.text(`tr[data-tp="orders-1"] td.member`), b.text(`tr[data-tp="orders-1"] td.lag`); m != member || lag != "–" {
		t.Errorf("orders-1 held by %q with lag %q, want %q and – (never committed)", m, lag, member)
	}
	if n := b.count(`#lag-chart svg polyline`); n != 1 {
		t.Errorf("%d lag charts", n)
	}
}

// TestBrowserActions drives every action through the console's own forms
// (so the browser's Origin and Sec-Fetch-Site headers and the hidden token
// are what a person's would be): create a topic, produce a test record,
// edit a config, preview and apply a group reset, dry-run a redrive, delete
// a group and a topic by typing their names.
func TestBrowserActions(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(f.srv.URL + "/"))
	b.do(chromedp.Click(chromedp.CSS(`#create-topic summary`)))
	b.do(chromedp.SendKeys(chromedp.CSS(`#create-topic input[name="name"]`), "made"))
	b.do(chromedp.SendKeys(chromedp.CSS(`#create-topic input[name="partitions"]`), "2"))
	b.follow(`#create-topic button`)
	if name, n := b.text(`#topic-name`), b.count(`#partitions tr[data-partition]`); name != "made" || n != 2 {
		t.Fatalf("after create: topic %q with %d partitions", name, n)
	}

	b.do(chromedp.Click(chromedp.CSS(`#produce summary`)))
	b.do(chromedp.SendKeys(chromedp.CSS(`#produce input[name="partition"]`), "1"))
	b.do(chromedp.SendKeys(chromedp.CSS(`#produce textarea[name="value"]`), `{"hello":"browser"}`))
	b.follow(`#produce button`)
	if v := b.text(`tr[data-offset="0"] td.value pre.json`); v != "{\n  \"hello\": \"browser\"\n}" {
		t.Errorf("the produced record shows as %q", v)
	}

	b.do(chromedp.Navigate(f.srv.URL + "/topics/made"))
	b.do(chromedp.Click(chromedp.CSS(`#edit-config summary`)))
	b.do(chromedp.SendKeys(chromedp.CSS(`#edit-config input[name="name"]`), "retention.ms"))
	b.do(chromedp.SendKeys(chromedp.CSS(`#edit-config input[name="value"]`), "120000"))
	b.follow(`#edit-config button`)
	if tp, _ := f.b.Topic("made"); tp == nil {
		t.Fatal("made is gone")
	} else if v, _ := tp.Config.Get("retention.ms"); v != "120000" {
		t.Errorf("retention.ms after the form: %q", v)
	}

	b.do(chromedp.Navigate(f.srv.URL + "/groups/billing"))
	b.do(chromedp.SetValue(chromedp.CSS(`#reset select[name="mode"]`), "latest"))
	b.follow(`#reset button`)
	if target := b.text(`#plan tr[data-tp="orders-0"] td.target`); target != "3" {
		t.Errorf("preview target for orders-0: %q", target)
	}
	if l, _ := f.b.GroupLag(context.Background(), "billing"); l.Total != 4 {
		t.Errorf("the preview changed the lag to %d", l.Total)
	}
	b.follow(`#apply button`)
	if lag := b.text(`#total-lag`); lag != "0" {
		t.Errorf("total lag after a reset to latest: %q", lag)
	}

	b.do(chromedp.Navigate(f.srv.URL + "/topics/events"))
	b.follow(`#dlq-view`)
	if count := b.text(`#reasons td.count`); count != "1" {
		t.Errorf("dead letters by reason: %q", count)
	}
	b.follow(`#dry-run`)
	if res := b.text(`#redrive-result`); !strings.HasPrefix(res, "Dry run — nothing was written: 0 would be redriven, 1 still invalid") {
		t.Errorf("dry run: %q", res)
	}

	b.do(chromedp.Navigate(f.srv.URL + "/groups/billing"))
	b.do(chromedp.Click(chromedp.CSS(`#delete-group summary`)))
	b.do(chromedp.SendKeys(chromedp.CSS(`#delete-group input[name="confirm"]`), "billing"))
	b.follow(`#delete-group button`)
	if n := b.count(`tr[data-group="billing"]`); n != 0 {
		t.Errorf("billing still listed after delete")
	}

	b.do(chromedp.Navigate(f.srv.URL + "/topics/made"))
	b.do(chromedp.Click(chromedp.CSS(`#delete-topic summary`)))
	b.do(chromedp.SendKeys(chromedp.CSS(`#delete-topic input[name="confirm"]`), "mad"))
	if resp, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS(`#delete-topic button`))); err != nil || resp.Status != 400 {
		t.Errorf("delete with a mistyped name: %v %v", resp, err)
	}
	b.do(chromedp.Navigate(f.srv.URL + "/topics/made"))
	b.do(chromedp.Click(chromedp.CSS(`#delete-topic summary`)))
	b.do(chromedp.SendKeys(chromedp.CSS(`#delete-topic input[name="confirm"]`), "made"))
	b.follow(`#delete-topic button`)
	if n := b.count(`tr[data-topic="made"]`); n != 0 {
		t.Errorf("made still listed after delete")
	}
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(80))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "overview.jpg"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// newBrowser starts a headless Chromium for the test (skipping without one).
func newBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) *browser {
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU)
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTimeout)
	return &browser{t: t, ctx: ctx}
}

// submit submits the form at css and waits for the page it loads.
func (b *browser) submit(css string) {
	b.t.Helper()
	b.load("submit "+css, chromedp.Submit(chromedp.CSS(css)))
}

// browser runs chromedp steps, failing the test on an error.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

// follow clicks the link at css and waits for the page it loads.
func (b *browser) follow(css string) {
	b.t.Helper()
	b.load("click "+css, chromedp.Click(chromedp.CSS(css)))
}

// load runs action and waits for the page it loads, which must be a 200.
func (b *browser) load(what string, action chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, action)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	if resp.Status != 200 {
		b.t.Fatalf("%s: HTTP %d", what, resp.Status)
	}
}

// status runs action and returns the HTTP status of the page it loads.
func (b *browser) status(action chromedp.Action[chromedp.Void]) int64 {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, action)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.Status
}

func (b *browser) text(css string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", css, err)
	}
	return strings.TrimSpace(s)
}

// count is the number of elements matching css.
func (b *browser) count(css string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(css)+`).length`))
	if err != nil {
		b.t.Fatalf("count %s: %v", css, err)
	}
	return n
}
