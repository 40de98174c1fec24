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

// TestScramUnknownUserLooksKnown: an unknown user's server-first has the
// shape of a real user's — a 16-byte salt that is the same on every try
// and differs from user to user, the usual iteration count — and the
// exchange then fails like a wrong password.
func TestScramUnknownUserLooksKnown(t *testing.T) {
	t.Parallel()
	u, err := New(map[string]string{"alice": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	serverFirst := func(user string) map[string]string {
		s, _ := u.Start(ScramSHA256)
		reply, _, err := s.Step([]byte("n,,n=" + user + ",r=abc"))
		if err != nil {
			t.Fatalf("client-first of %s: %v", user, err)
		}
		return attributes(string(reply))
	}
	alice, mallory1, mallory2, eve := serverFirst("alice"), serverFirst("mallory"), serverFirst("mallory"), serverFirst("eve")
	if mallory1["s"] != mallory2["s"] {
		t.Errorf("an unknown user's salt changes between tries (%s, %s): a real user's does not", mallory1["s"], mallory2["s"])
	}
	if mallory1["s"] == eve["s"] {
		t.Error("two unknown users share a salt")
	}
	if len(mallory1["s"]) != len(alice["s"]) || mallory1["i"] != alice["i"] {
		t.Errorf("unknown user answered s=%s,i=%s; a real one s=%s,i=%s", mallory1["s"], mallory1["i"], alice["s"], alice["i"])
	}
	if _, err := exchange(t, u, scram.Auth{User: "mallory", Pass: "s3cret"}.AsSha256Mechanism()); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("unknown user: %v, want ErrAuthFailed", err)
	}
}
