package acl

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func sampleSet(t testing.TB) *Set {
	return mustSet(t,
		allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "orders"),
		allow(WildcardPrincipal, "10.0.0.1", OpAll, PatternLiteral, ResourceTopic, "*"),
		deny(bob, "::1", OpWrite, PatternPrefixed, ResourceTopic, "secret-"),
		allow(bob, "*", OpRead, PatternPrefixed, ResourceGroup, "etl-"),
		allow(admin, "*", OpAlter, PatternLiteral, ResourceCluster, ClusterName),
		allow(alice, "*", OpWrite, PatternLiteral, ResourceTransactionalID, "tx-ü"),
		allow(alice, "*", OpCreateTokens, PatternLiteral, ResourceUser, "User:bob"),
	)
}

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []*Set{{}, nil, sampleSet(t)} {
		enc := s.Encode(nil)
		got, err := Decode(enc)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if fmt.Sprint(got.Bindings()) != fmt.Sprint(s.Bindings()) {
			t.Fatalf("round trip: got %v, want %v", got.Bindings(), s.Bindings())
		}
		if again := got.Encode(nil); !bytes.Equal(again, enc) {
			t.Fatal("re-encoding differs")
		}
	}
	// Deterministic: the same ACLs created in another order encode alike.
	bs := sampleSet(t).Bindings()
	rev := make([]Binding, len(bs))
	for i, b := range bs {
		rev[len(bs)-1-i] = b
	}
	if a, b := mustSet(t, bs...).Encode(nil), mustSet(t, rev...).Encode(nil); !bytes.Equal(a, b) {
		t.Fatal("encoding depends on insertion order")
	}
	// A decoded set decides like the original.
	got, _ := Decode(sampleSet(t).Encode(nil))
	a := New(Config{})
	a.Replace(got)
	if !a.Allowed(bob, "1.2.3.4", OpRead, Group("etl-x")) || a.Allowed(bob, "::1", OpWrite, Topic("secret-x")) {
		t.Fatal("decoded set decides differently")
	}
}

func TestCodecGolden(t *testing.T) {
	t.Parallel()
	s := mustSet(t, allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "t"))
	want := []byte("SACL\x01\x01" + "\x02\x03" + "\x01t" + "\x0aUser:alice" + "\x01*" + "\x03\x03")
	if got := s.Encode(nil); !bytes.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	good := mustSet(t,
		allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "a"),
		allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "b"),
	).Encode(nil)
	one := mustSet(t, allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "a")).Encode(nil)
	binding := func(rt, pt byte, name, principal, host string, op, perm byte) string {
		return string([]byte{rt, pt}) + string(rune(len(name))) + name + string(rune(len(principal))) + principal +
			string(rune(len(host))) + host + string([]byte{op, perm})
	}
	a := binding(2, 3, "a", "User:alice", "*", 3, 3)
	b := binding(2, 3, "b", "User:alice", "*", 3, 3)
	cases := map[string][]byte{
		"empty":                   nil,
		"bad magic":               []byte("XACL\x01\x00"),
		"unknown version":         []byte("SACL\x02\x00"),
		"no count":                []byte("SACL\x01"),
		"huge count":              []byte("SACL\x01\xff\xff\xff\xff\x0f"),
		"count beyond the bytes":  append([]byte("SACL\x01\x05"), one[6:]...),
		"truncated":               good[:len(good)-1],
		"trailing byte":           append(bytes.Clone(good), 0),
		"string longer than data": []byte("SACL\x01\x01\x02\x03\x7fa\x00\x00\x00\x00\x00"),
		"out of order":            []byte("SACL\x01\x02" + b + a),
		"repeated":                []byte("SACL\x01\x02" + a + a),
		"invalid binding":         []byte("SACL\x01\x01" + binding(1, 3, "a", "User:alice", "*", 3, 3)),
		"bad principal":           []byte("SACL\x01\x01" + binding(2, 3, "a", "alice", "*", 3, 3)),
		"non-canonical host":      []byte("SACL\x01\x01" + binding(2, 3, "a", "User:alice", "::ffff:1.2.3.4", 3, 3)),
		"negative enum":           []byte("SACL\x01\x01" + binding(0x82, 3, "a", "User:alice", "*", 3, 3)),
	}
	if _, err := Decode([]byte("SACL\x01\x02" + a + b)); err != nil {
		t.Fatalf("hand-built encoding refused: %v", err)
	}
	for name, data := range cases {
		_, err := Decode(data)
		var ce *CorruptError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want a *CorruptError", name, err)
		}
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to
// the same bytes (one Set, one encoding). Inputs are also fed split in two
// halves, the second appended to the first, as the house fuzzers do.
func FuzzDecode(f *testing.F) {
	f.Add(sampleSet(f).Encode(nil))
	f.Add((&Set{}).Encode(nil))
	f.Add([]byte("SACL\x01\x01\x02\x03\x01t\x0aUser:alice\x01*\x03\x03"))
	f.Add([]byte("SACL\x01\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, append(bytes.Clone(data[len(data)/2:]), data[:len(data)/2]...)} {
			s, err := Decode(in)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v is not ErrCorrupt", err)
				}
				continue
			}
			if out := s.Encode(nil); !bytes.Equal(out, in) {
				t.Fatalf("accepted %q but re-encodes as %q", in, out)
			}
			// Every decoded binding is usable by the authorizer.
			a := New(Config{})
			a.Replace(s)
			for _, b := range s.Bindings() {
				if b.Pattern.PatternType == PatternLiteral {
					a.Authorize(Request{Principal: b.Entry.Principal, Host: b.Entry.Host, Operation: b.Entry.Operation, Resource: Resource{b.Pattern.Type, b.Pattern.Name}})
				}
			}
		}
	})
}
