package kafka

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/sasl"
)

// TestSASLListener: on a SASL listener franz-go clients authenticate with
// each mechanism and produce; a wrong password fails authentication, a
// client without SASL gets nowhere, and the raw protocol shows the rules: a
// request before authentication closes the connection, SaslAuthenticate
// needs a handshake first, and a failed exchange's answer is the
// connection's last.
func TestSASLListener(t *testing.T) {
	t.Parallel()
	users, err := sasl.New(map[string]string{"app": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, broker.Config{}, Config{SASL: users})
	createTopic(t, ts.b, "guarded", 1, nil)
	produce := func(mech fsasl.Mechanism) error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		opts := []kgo.Opt{kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("guarded")}
		if mech != nil {
			opts = append(opts, kgo.SASL(mech))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("authenticated")}).FirstErr()
	}
	for _, m := range []fsasl.Mechanism{
		plain.Auth{User: "app", Pass: "s3cret"}.AsMechanism(),
		scram.Auth{User: "app", Pass: "s3cret"}.AsSha256Mechanism(),
		scram.Auth{User: "app", Pass: "s3cret"}.AsSha512Mechanism(),
	} {
		if err := produce(m); err != nil {
			t.Errorf("%s: %v", m.Name(), err)
		}
	}
	if err := produce(scram.Auth{User: "app", Pass: "guess"}.AsSha256Mechanism()); err == nil {
		t.Error("a wrong password produced")
	}
	if err := produce(nil); err == nil {
		t.Error("a client without SASL produced")
	}
	p, _ := ts.b.Partition("guarded", 0)
	if hw := p.HighWatermark(); hw != 3 {
		t.Errorf("%d records in the log, want the 3 authenticated ones", hw)
	}

	c := dial(t, ts.addr)
	c.send(kmsg.NewPtrMetadataRequest(), 9)
	c.expectClosed()

	c = dial(t, ts.addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00app\x00s3cret")
	r := c.do(auth, 2).(*kmsg.SASLAuthenticateResponse)
	wantCode(t, "authenticate without a handshake", r.ErrorCode, kerr.IllegalSaslState)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	h := c.do(hs, 1).(*kmsg.SASLHandshakeResponse)
	wantCode(t, "handshake", h.ErrorCode, nil)
	if len(h.SupportedMechanisms) != 3 {
		t.Errorf("mechanisms %v", h.SupportedMechanisms)
	}
	auth.SASLAuthBytes = []byte("\x00app\x00wrong")
	r = c.do(auth, 2).(*kmsg.SASLAuthenticateResponse)
	wantCode(t, "wrong password", r.ErrorCode, kerr.SaslAuthenticationFailed)
	c.expectClosed()
}

// lockedBuffer is a log sink tests read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFailedAuthDelayed: each failed authentication holds its answer for
// connection.failed.authentication.delay.ms (Kafka's 100 ms by default),
// so guessing is slow, and the log line names the user who failed.
func TestFailedAuthDelayed(t *testing.T) {
	users, err := sasl.New(map[string]string{"app": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	ts := startServer(t, broker.Config{}, Config{SASL: users, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	const tries = 10
	start := time.Now()
	for range tries {
		c := dial(t, ts.addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "PLAIN"
		wantCode(t, "handshake", c.do(hs, 1).(*kmsg.SASLHandshakeResponse).ErrorCode, nil)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = []byte("\x00mallory\x00guess")
		wantCode(t, "wrong password", c.do(auth, 2).(*kmsg.SASLAuthenticateResponse).ErrorCode, kerr.SaslAuthenticationFailed)
		c.expectClosed()
	}
	if took, least := time.Since(start), tries*DefaultFailedAuthDelay; took < least {
		t.Errorf("%d failed logins took %v; each must wait %v", tries, took, DefaultFailedAuthDelay)
	}
	if !strings.Contains(logs.String(), "user=mallory") {
		t.Errorf("failure log lines do not name the user:\n%s", logs.String())
	}
}
