package console

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
	exe := chromium(t)
	f := newFixture(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	b := &browser{t: t, ctx: ctx}
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
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS(css)))
	if err != nil {
		b.t.Fatalf("click %s: %v", css, err)
	}
	if resp.Status != 200 {
		b.t.Fatalf("click %s: HTTP %d", css, resp.Status)
	}
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
