package sasl

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// exchange drives a server session with a real client implementation of
// the mechanism (franz-go's), as a Kafka client would over SaslAuthenticate.
func exchange(t *testing.T, u *Users, client sasl.Mechanism) (user string, err error) {
	t.Helper()
	sess, msg, err := client.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		return "", fmt.Errorf("%w (the client refused: %v)", ErrAuthFailed, err)
	}
	server, err := u.Start(client.Name())
	if err != nil {
		return "", err
	}
	for range 4 {
		reply, done, err := server.Step(msg)
		if err != nil {
			return "", err
		}
		clientDone, next, err := sess.Challenge(reply)
		if err != nil {
			t.Fatalf("the client rejects the server's reply: %v", err)
		}
		if done {
			if !clientDone {
				t.Fatal("server done, client not")
			}
			return server.User(), nil
		}
		msg = next
	}
	t.Fatal("exchange did not end")
	return "", nil
}

// TestMechanisms: each mechanism accepts the right password (and names the
// user), refuses a wrong one and an unknown user alike, and SCRAM's server
// signature satisfies the client (which checks it).
func TestMechanisms(t *testing.T) {
	t.Parallel()
	u, err := New(map[string]string{"alice": "s3cret", "b,o=b": "pa:ss"})
	if err != nil {
		t.Fatal(err)
	}
	clients := func(user, pass string) []sasl.Mechanism {
		return []sasl.Mechanism{
			plain.Auth{User: user, Pass: pass}.AsMechanism(),
			scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(),
			scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(),
		}
	}
	for _, tc := range []struct {
		user, pass string
		ok         bool
	}{
		{"alice", "s3cret", true},
		{"b,o=b", "pa:ss", true}, // SCRAM escapes ',' and '=' in names
		{"alice", "wrong", false},
		{"mallory", "s3cret", false},
		{"alice", "", false},
	} {
		for _, c := range clients(tc.user, tc.pass) {
			user, err := exchange(t, u, c)
			switch {
			case tc.ok && (err != nil || user != tc.user):
				t.Errorf("%s %s/%s: %v (user %q)", c.Name(), tc.user, tc.pass, err, user)
			case !tc.ok && err == nil:
				t.Errorf("%s %s/%s: accepted", c.Name(), tc.user, tc.pass)
			case !tc.ok && !errors.Is(err, ErrAuthFailed):
				t.Errorf("%s %s/%s: %v, want ErrAuthFailed", c.Name(), tc.user, tc.pass, err)
			}
		}
	}
	if _, err := u.Start("GSSAPI"); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Errorf("GSSAPI: %v", err)
	}
}

// TestMalformedMessages: garbage at any step is a failed authentication,
// never a panic.
func TestMalformedMessages(t *testing.T) {
	t.Parallel()
	u, err := New(map[string]string{"alice": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	for _, mech := range u.Mechanisms() {
		for _, msg := range []string{"", "\x00", "n,,", "p=tls,,n=alice,r=x", "n,,n=al=ice,r=x", "n,,n=alice", "a\x00b\x00c\x00d"} {
			s, _ := u.Start(mech)
			if _, _, err := s.Step([]byte(msg)); err == nil && mech == Plain {
				t.Errorf("%s accepted %q", mech, msg)
			}
		}
		s, _ := u.Start(mech)
		if mech != Plain {
			if _, _, err := s.Step([]byte("n,,n=alice,r=abc")); err != nil {
				t.Fatal(err)
			}
			for _, final := range []string{"", "c=biws,r=abc,p=AAAA", "c=biws,r=wrong,p=", "p=%%%"} {
				if _, _, err := s.Step([]byte(final)); err == nil {
					t.Errorf("%s accepted final %q", mech, final)
				}
			}
		}
	}
}

func FuzzScram(f *testing.F) {
	u, err := New(map[string]string{"alice": "s3cret"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s, _ := u.Start(ScramSHA256)
		if _, _, err := s.Step(first); err != nil {
			return
		}
		if _, done, err := s.Step(final); err == nil || done {
			t.Fatalf("random final message %q authenticated", final)
		}
	})
}

func TestParseUsers(t *testing.T) {
	t.Parallel()
	got, err := ParseUsers([]byte("# accounts\nalice:s3cret\n\nbob:pa:ss\n"))
	if err != nil || len(got) != 2 || got["alice"] != "s3cret" || got["bob"] != "pa:ss" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"alice", "alice:", ":pw", "a:1\na:2"} {
		if _, err := ParseUsers([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
