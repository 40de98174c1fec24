package acl

import (
	"fmt"
	"testing"
)

// benchSet is 10,000 ACLs shaped like a multi-tenant cluster: 200 teams,
// each with prefixed Write and Read grants on its topic prefix and its
// group prefix, literal grants on 40 topics for 5 principals each, a deny,
// and a few cluster-wide and wildcard ACLs.
func benchSet(b *testing.B) *Set {
	var bs []Binding
	for team := range 200 {
		prefix := fmt.Sprintf("team%03d.", team)
		owner := User(fmt.Sprintf("svc-%03d", team))
		bs = append(bs,
			allow(owner, "*", OpWrite, PatternPrefixed, ResourceTopic, prefix),
			allow(owner, "*", OpRead, PatternPrefixed, ResourceTopic, prefix),
			allow(owner, "*", OpRead, PatternPrefixed, ResourceGroup, prefix),
			deny(owner, "*", OpDelete, PatternPrefixed, ResourceTopic, prefix+"audit."),
		)
		for topic := range 8 {
			for reader := range 5 {
				p := User(fmt.Sprintf("reader-%03d-%d", team, reader))
				bs = append(bs, allow(p, "*", OpRead, PatternLiteral, ResourceTopic, fmt.Sprintf("%sevents-%d", prefix, topic)))
			}
		}
		for extra := range 6 {
			bs = append(bs, allow(owner, fmt.Sprintf("10.0.%d.%d", team, extra), OpDescribe, PatternLiteral, ResourceGroup, fmt.Sprintf("%sg%d", prefix, extra)))
		}
	}
	bs = append(bs,
		allow(User("ops"), "*", OpDescribe, PatternLiteral, ResourceTopic, "*"),
		allow(User("ops"), "*", OpDescribe, PatternLiteral, ResourceCluster, ClusterName),
	)
	s, err := NewSet(bs)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAuthorize: one check against 10,000 ACLs (DESIGN target < 1 µs).
func BenchmarkAuthorize(b *testing.B) {
	s := benchSet(b)
	if s.Len() < 10_000 {
		b.Fatalf("only %d ACLs", s.Len())
	}
	a := New(Config{SuperUsers: []Principal{admin}})
	a.Replace(s)
	cases := []struct {
		name string
		req  Request
		want bool
	}{
		{"prefixed allow", Request{User("svc-123"), "10.1.2.3", OpWrite, Topic("team123.orders.v2")}, true},
		{"literal allow", Request{User("reader-077-3"), "10.1.2.3", OpRead, Topic("team077.events-5")}, true},
		{"deny under allow", Request{User("svc-042"), "10.1.2.3", OpDelete, Topic("team042.audit.log")}, false},
		{"no grant", Request{User("svc-001"), "10.1.2.3", OpWrite, Topic("team002.orders")}, false},
		{"unrelated name", Request{User("svc-001"), "10.1.2.3", OpRead, Topic("zzz-no-acl-covers-this")}, false},
		{"wildcard", Request{User("ops"), "10.1.2.3", OpDescribe, Topic("team199.x")}, true},
	}
	for _, c := range cases {
		if got := a.Authorize(c.req).Allowed; got != c.want {
			b.Fatalf("%s: got %v", c.name, got)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.Authorize(c.req)
			}
		})
	}
}

// BenchmarkCreate: adding one ACL to 10,000 (copy-on-write rebuild).
func BenchmarkCreate(b *testing.B) {
	s := benchSet(b)
	extra := allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "new")
	for b.Loop() {
		if _, err := s.With(extra); err != nil {
			b.Fatal(err)
		}
	}
}
