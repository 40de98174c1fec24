package console

import (
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/httpauth"
	"github.com/strandmq/strand/internal/sasl"
)

// TestBrowserSignedIn: headless Chromium over HTTPS to a console behind
// httpauth with an authorizer. Without credentials the page is a 401;
// signed in as alice (HTTP basic, checked against the SASL users), the
// overview lists only the topic and the group she may describe, and the
// page of a topic she may not describe is a 404 — as if it did not exist.
func TestBrowserSignedIn(t *testing.T) {
	f := newFixture(t)
	set, err := (&acl.Set{}).With(
		acl.Binding{Pattern: acl.Pattern{Type: acl.ResourceTopic, Name: "orders", PatternType: acl.PatternLiteral},
			Entry: acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.Allow}},
		acl.Binding{Pattern: acl.Pattern{Type: acl.ResourceGroup, Name: "billing", PatternType: acl.PatternLiteral},
			Entry: acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpDescribe, Permission: acl.Allow}},
	)
	if err != nil {
		t.Fatal(err)
	}
	a := acl.New(acl.Config{})
	a.Replace(set)
	f.c.SetAuthorizer(a)
	users, err := sasl.New(map[string]string{"alice": "alicepw"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(httpauth.Guard(f.c, httpauth.Config{Name: "console", Addr: "127.0.0.1:0", Users: users, Authorizing: true}, nil))
	srv.StartTLS()
	t.Cleanup(srv.Close)

	b := newBrowser(t, chromedp.Flag("ignore-certificate-errors", true))
	// Headless Chromium cannot prompt for the password: it fails the
	// navigation on the 401's Basic challenge.
	if resp, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(srv.URL+"/")); err == nil && resp.Status != 401 ||
		err != nil && !strings.Contains(err.Error(), "ERR_INVALID_AUTH_CREDENTIALS") {
		t.Fatalf("the overview without credentials: %v %v, want a 401", resp, err)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:alicepw"))
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatal(err)
	}
	b.load("overview as alice", chromedp.Navigate(srv.URL+"/"))
	if n := b.count(`tr[data-topic]`); n != 1 {
		t.Errorf("alice's overview lists %d topics, want 1 (orders)", n)
	}
	if n := b.count(`tr[data-topic="orders"]`); n != 1 {
		t.Error("alice's overview does not list orders")
	}
	if n := b.count(`tr[data-group="billing"]`); n != 1 {
		t.Error("alice's overview does not list billing")
	}
	if status := b.status(chromedp.Navigate(srv.URL + "/topics/events")); status != 404 {
		t.Errorf("a topic alice may not describe: HTTP %d, want 404", status)
	}
	b.load("orders as alice", chromedp.Navigate(srv.URL+"/topics/orders"))
	if name := b.text(`#topic-name`); name != "orders" {
		t.Errorf("orders' page shows %q", name)
	}
}
