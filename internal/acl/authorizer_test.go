package acl

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

var (
	alice = User("alice")
	bob   = User("bob")
	admin = User("admin")
)

func allow(p Principal, host string, op Operation, pt PatternType, rt ResourceType, name string) Binding {
	return Binding{Pattern{rt, name, pt}, Entry{p, host, op, Allow}}
}

func deny(p Principal, host string, op Operation, pt PatternType, rt ResourceType, name string) Binding {
	return Binding{Pattern{rt, name, pt}, Entry{p, host, op, Deny}}
}

func mustSet(t testing.TB, bs ...Binding) *Set {
	t.Helper()
	s, err := NewSet(bs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAuthorize is the table of StandardAuthorizer's rules: each case is a
// set of ACLs, a config and requests with the verdict and reason expected.
func TestAuthorize(t *testing.T) {
	t.Parallel()
	const host = "10.0.0.1"
	type ask struct {
		p      Principal
		host   string
		op     Operation
		r      Resource
		want   bool
		reason Reason
	}
	cases := []struct {
		name string
		cfg  Config
		acls []Binding
		asks []ask
	}{
		{
			name: "no ACLs, allow.everyone.if.no.acl.found off (default)",
			asks: []ask{{alice, host, OpRead, Topic("t"), false, ReasonNoACL}},
		},
		{
			name: "no ACLs, allow.everyone.if.no.acl.found on",
			cfg:  Config{AllowIfNoACL: true},
			asks: []ask{
				{alice, host, OpRead, Topic("t"), true, ReasonNoACL},
				{alice, host, OpAlter, Cluster(), true, ReasonNoACL},
			},
		},
		{
			name: "allow.everyone.if.no.acl.found applies only when no ACL is about the resource",
			cfg:  Config{AllowIfNoACL: true},
			acls: []Binding{allow(bob, "*", OpRead, PatternLiteral, ResourceTopic, "t")},
			asks: []ask{
				{alice, host, OpRead, Topic("t"), false, ReasonNoAllowACL}, // an ACL about t exists, for bob
				{alice, host, OpRead, Topic("u"), true, ReasonNoACL},       // none about u
				{bob, host, OpWrite, Topic("t"), false, ReasonNoAllowACL},  // about t, not this operation
				{bob, host, OpRead, Group("t"), true, ReasonNoACL},         // another resource type
			},
		},
		{
			name: "literal allow",
			acls: []Binding{allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "orders")},
			asks: []ask{
				{alice, host, OpRead, Topic("orders"), true, ReasonAllowACL},
				{alice, host, OpRead, Topic("orders2"), false, ReasonNoACL},
				{alice, host, OpRead, Topic("order"), false, ReasonNoACL},
				{bob, host, OpRead, Topic("orders"), false, ReasonNoAllowACL},
			},
		},
		{
			name: "deny wins over allow",
			acls: []Binding{
				allow(alice, "*", OpAll, PatternLiteral, ResourceTopic, "*"),
				deny(alice, "*", OpWrite, PatternPrefixed, ResourceTopic, "secret-"),
			},
			asks: []ask{
				{alice, host, OpWrite, Topic("secret-x"), false, ReasonDenyACL},
				{alice, host, OpRead, Topic("secret-x"), true, ReasonAllowACL},
				{alice, host, OpWrite, Topic("public"), true, ReasonAllowACL},
			},
		},
		{
			name: "deny for User:* beats allow for the principal",
			acls: []Binding{
				allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "t"),
				deny(WildcardPrincipal, "*", OpRead, PatternLiteral, ResourceTopic, "t"),
			},
			asks: []ask{{alice, host, OpRead, Topic("t"), false, ReasonDenyACL}},
		},
		{
			name: "deny All denies every operation",
			acls: []Binding{
				allow(alice, "*", OpAll, PatternLiteral, ResourceGroup, "g"),
				deny(alice, "*", OpAll, PatternLiteral, ResourceGroup, "g"),
			},
			asks: []ask{
				{alice, host, OpRead, Group("g"), false, ReasonDenyACL},
				{alice, host, OpDescribe, Group("g"), false, ReasonDenyACL},
			},
		},
		{
			name: "super users bypass deny and the missing-ACL default",
			cfg:  Config{SuperUsers: []Principal{admin}},
			acls: []Binding{deny(WildcardPrincipal, "*", OpAll, PatternLiteral, ResourceTopic, "*")},
			asks: []ask{
				{admin, host, OpDelete, Topic("t"), true, ReasonSuperUser},
				{admin, host, OpAlter, Cluster(), true, ReasonSuperUser},
				{alice, host, OpRead, Topic("t"), false, ReasonDenyACL},
			},
		},
		{
			name: "super user match is exact: User:* in super.users is not everyone",
			cfg:  Config{SuperUsers: []Principal{WildcardPrincipal}},
			asks: []ask{{alice, host, OpRead, Topic("t"), false, ReasonNoACL}},
		},
		{
			name: "prefixed patterns match by prefix, including the whole name",
			acls: []Binding{allow(alice, "*", OpWrite, PatternPrefixed, ResourceTopic, "app.")},
			asks: []ask{
				{alice, host, OpWrite, Topic("app.orders"), true, ReasonAllowACL},
				{alice, host, OpWrite, Topic("app."), true, ReasonAllowACL},
				{alice, host, OpWrite, Topic("app"), false, ReasonNoACL},
				{alice, host, OpWrite, Topic("xapp.orders"), false, ReasonNoACL},
			},
		},
		{
			name: "several prefixes of one name all apply",
			acls: []Binding{
				allow(alice, "*", OpRead, PatternPrefixed, ResourceTopic, "a"),
				allow(bob, "*", OpRead, PatternPrefixed, ResourceTopic, "ab"),
				deny(bob, "*", OpRead, PatternPrefixed, ResourceTopic, "a"),
				allow(bob, "*", OpRead, PatternPrefixed, ResourceTopic, "abd"), // not a prefix of abc
				allow(bob, "*", OpRead, PatternPrefixed, ResourceTopic, "b"),
			},
			asks: []ask{
				{alice, host, OpRead, Topic("abc"), true, ReasonAllowACL},
				{bob, host, OpRead, Topic("abc"), false, ReasonDenyACL},
				{bob, host, OpRead, Topic("bcd"), true, ReasonAllowACL},
			},
		},
		{
			name: "literal * matches every resource of its type, and only of its type",
			acls: []Binding{allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "*")},
			asks: []ask{
				{alice, host, OpRead, Topic("anything"), true, ReasonAllowACL},
				{alice, host, OpRead, Topic("*"), true, ReasonAllowACL},
				{alice, host, OpRead, Group("anything"), false, ReasonNoACL},
			},
		},
		{
			name: "prefixed * is a prefix, not a wildcard",
			acls: []Binding{allow(alice, "*", OpRead, PatternPrefixed, ResourceTopic, "*")},
			asks: []ask{
				{alice, host, OpRead, Topic("*x"), true, ReasonAllowACL},
				{alice, host, OpRead, Topic("x"), false, ReasonNoACL},
			},
		},
		{
			name: "a literal name is not a prefix",
			acls: []Binding{allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "app")},
			asks: []ask{{alice, host, OpRead, Topic("app.x"), false, ReasonNoACL}},
		},
		{
			name: "User:* matches every principal, other wildcards nothing",
			acls: []Binding{
				allow(WildcardPrincipal, "*", OpRead, PatternLiteral, ResourceTopic, "t"),
				allow(Principal("Group:*"), "*", OpRead, PatternLiteral, ResourceTopic, "u"),
			},
			asks: []ask{
				{alice, host, OpRead, Topic("t"), true, ReasonAllowACL},
				{Principal("User:CN=client,O=acme"), host, OpRead, Topic("t"), true, ReasonAllowACL},
				{alice, host, OpRead, Topic("u"), false, ReasonNoAllowACL},
			},
		},
		{
			name: "host: exact or *",
			acls: []Binding{
				allow(alice, "10.0.0.1", OpRead, PatternLiteral, ResourceTopic, "t"),
				allow(bob, "*", OpRead, PatternLiteral, ResourceTopic, "t"),
				deny(bob, "10.0.0.9", OpRead, PatternLiteral, ResourceTopic, "t"),
			},
			asks: []ask{
				{alice, "10.0.0.1", OpRead, Topic("t"), true, ReasonAllowACL},
				{alice, "10.0.0.2", OpRead, Topic("t"), false, ReasonNoAllowACL},
				{alice, "::ffff:10.0.0.1", OpRead, Topic("t"), true, ReasonAllowACL}, // mapped form is the same host
				{bob, "10.0.0.2", OpRead, Topic("t"), true, ReasonAllowACL},
				{bob, "10.0.0.9", OpRead, Topic("t"), false, ReasonDenyACL},
			},
		},
		{
			name: "IPv6 hosts compare canonically",
			acls: []Binding{allow(alice, "0:0:0:0:0:0:0:1", OpRead, PatternLiteral, ResourceTopic, "t")},
			asks: []ask{{alice, "::1", OpRead, Topic("t"), true, ReasonAllowACL}},
		},
		{
			name: "allow implication: Describe from Read, Write, Delete, Alter",
			acls: []Binding{
				allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "r"),
				allow(alice, "*", OpWrite, PatternLiteral, ResourceTopic, "w"),
				allow(alice, "*", OpDelete, PatternLiteral, ResourceTopic, "d"),
				allow(alice, "*", OpAlter, PatternLiteral, ResourceTopic, "a"),
				allow(alice, "*", OpCreate, PatternLiteral, ResourceTopic, "c"),
				allow(alice, "*", OpAlterConfigs, PatternLiteral, ResourceTopic, "ac"),
				allow(alice, "*", OpDescribeConfigs, PatternLiteral, ResourceTopic, "dc"),
				allow(alice, "*", OpAll, PatternLiteral, ResourceTopic, "all"),
			},
			asks: []ask{
				{alice, host, OpDescribe, Topic("r"), true, ReasonAllowACL},
				{alice, host, OpDescribe, Topic("w"), true, ReasonAllowACL},
				{alice, host, OpDescribe, Topic("d"), true, ReasonAllowACL},
				{alice, host, OpDescribe, Topic("a"), true, ReasonAllowACL},
				{alice, host, OpDescribe, Topic("c"), false, ReasonNoAllowACL},  // Create does not imply Describe
				{alice, host, OpDescribe, Topic("ac"), false, ReasonNoAllowACL}, // nor AlterConfigs
				{alice, host, OpDescribeConfigs, Topic("ac"), true, ReasonAllowACL},
				{alice, host, OpAlterConfigs, Topic("dc"), false, ReasonNoAllowACL},
				{alice, host, OpDescribeConfigs, Topic("r"), false, ReasonNoAllowACL},
				{alice, host, OpRead, Topic("w"), false, ReasonNoAllowACL}, // Write does not imply Read
				{alice, host, OpWrite, Topic("r"), false, ReasonNoAllowACL},
				{alice, host, OpIdempotentWrite, Topic("all"), true, ReasonAllowACL},
				{alice, host, OpDescribe, Topic("all"), true, ReasonAllowACL},
			},
		},
		{
			name: "deny does not imply: Deny Read leaves Describe to the allow",
			acls: []Binding{
				allow(alice, "*", OpAll, PatternLiteral, ResourceTopic, "t"),
				deny(alice, "*", OpRead, PatternLiteral, ResourceTopic, "t"),
				deny(alice, "*", OpAlterConfigs, PatternLiteral, ResourceTopic, "t"),
			},
			asks: []ask{
				{alice, host, OpRead, Topic("t"), false, ReasonDenyACL},
				{alice, host, OpDescribe, Topic("t"), true, ReasonAllowACL},
				{alice, host, OpDescribeConfigs, Topic("t"), true, ReasonAllowACL},
			},
		},
		{
			name: "cluster, group and transactional id resources",
			acls: []Binding{
				allow(alice, "*", OpCreate, PatternLiteral, ResourceCluster, ClusterName),
				allow(alice, "*", OpRead, PatternPrefixed, ResourceGroup, "etl-"),
				allow(alice, "*", OpWrite, PatternLiteral, ResourceTransactionalID, "tx-1"),
			},
			asks: []ask{
				{alice, host, OpCreate, Cluster(), true, ReasonAllowACL},
				{alice, host, OpAlter, Cluster(), false, ReasonNoAllowACL},
				{alice, host, OpRead, Group("etl-nightly"), true, ReasonAllowACL},
				{alice, host, OpWrite, TransactionalID("tx-1"), true, ReasonAllowACL},
				{alice, host, OpDescribe, TransactionalID("tx-1"), true, ReasonAllowACL},
				{alice, host, OpWrite, Topic("tx-1"), false, ReasonNoACL},
			},
		},
		{
			name: "Any and Unknown cannot be asked",
			cfg:  Config{AllowIfNoACL: true},
			asks: []ask{
				{alice, host, OpAny, Topic("t"), false, ReasonInvalid},
				{alice, host, OpUnknown, Topic("t"), false, ReasonInvalid},
				{alice, host, OpRead, Resource{ResourceAny, "t"}, false, ReasonInvalid},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := New(c.cfg)
			if err := a.Create(c.acls...); err != nil {
				t.Fatal(err)
			}
			for _, q := range c.asks {
				d := a.Authorize(Request{Principal: q.p, Host: q.host, Operation: q.op, Resource: q.r})
				if d.Allowed != q.want || d.Reason != q.reason {
					t.Errorf("%s %s %v %v: got allowed=%v (%v), want %v (%v)", q.p, q.host, q.op, q.r, d.Allowed, d.Reason, q.want, q.reason)
				}
				if (d.Reason == ReasonAllowACL || d.Reason == ReasonDenyACL) && !d.ACL.Pattern.Matches(q.r) {
					t.Errorf("%v: deciding ACL %v does not cover the resource", q.r, d.ACL)
				}
			}
		})
	}
}

// naive is the decision written straight from the rules, scanning every
// ACL: the index must agree with it.
func naive(cfg Config, bs []Binding, req Request) bool {
	for _, p := range cfg.SuperUsers {
		if p == req.Principal {
			return true
		}
	}
	about, allowed := false, false
	for _, b := range bs {
		if !b.Pattern.Matches(req.Resource) {
			continue
		}
		about = true
		e := b.Entry
		if e.Principal != req.Principal && e.Principal != WildcardPrincipal {
			continue
		}
		if e.Host != "*" && e.Host != req.Host {
			continue
		}
		if e.Permission == Deny && (e.Operation == req.Operation || e.Operation == OpAll) {
			return false
		}
		if e.Permission == Allow && implies(e.Operation, req.Operation) {
			allowed = true
		}
	}
	if allowed {
		return true
	}
	return !about && cfg.AllowIfNoACL
}

// TestAuthorizeMatchesNaive checks the indexed lookup (map of literals,
// prefix walk over a sorted slice) against the naive scan on random ACL
// sets over a small alphabet, where prefixes collide often.
func TestAuthorizeMatchesNaive(t *testing.T) {
	t.Parallel()
	name := rapid.StringOfN(rapid.SampledFrom([]rune("aab*")), 1, 4, -1)
	principal := rapid.SampledFrom([]Principal{alice, bob, WildcardPrincipal})
	host := rapid.SampledFrom([]string{"*", "10.0.0.1", "10.0.0.2"})
	op := rapid.SampledFrom([]Operation{OpAll, OpRead, OpWrite, OpDescribe, OpAlter, OpAlterConfigs, OpDescribeConfigs, OpCreate})
	rtype := rapid.SampledFrom([]ResourceType{ResourceTopic, ResourceGroup})
	binding := rapid.Custom(func(t *rapid.T) Binding {
		return Binding{
			Pattern: Pattern{rtype.Draw(t, "rtype"), name.Draw(t, "name"), rapid.SampledFrom([]PatternType{PatternLiteral, PatternPrefixed}).Draw(t, "ptype")},
			Entry:   Entry{principal.Draw(t, "principal"), host.Draw(t, "host"), op.Draw(t, "op"), rapid.SampledFrom([]Permission{Allow, Deny}).Draw(t, "perm")},
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{AllowIfNoACL: rapid.Bool().Draw(t, "allowIfNoACL")}
		if rapid.Bool().Draw(t, "super") {
			cfg.SuperUsers = []Principal{bob}
		}
		bs := rapid.SliceOfN(binding, 0, 60).Draw(t, "acls")
		a := New(cfg)
		if err := a.Create(bs...); err != nil {
			t.Fatal(err)
		}
		for range 50 {
			req := Request{
				Principal: rapid.SampledFrom([]Principal{alice, bob}).Draw(t, "req.principal"),
				Host:      rapid.SampledFrom([]string{"10.0.0.1", "10.0.0.2"}).Draw(t, "req.host"),
				Operation: op.Filter(func(o Operation) bool { return o != OpAll }).Draw(t, "req.op"),
				Resource:  Resource{rtype.Draw(t, "req.rtype"), name.Draw(t, "req.name")},
			}
			if got, want := a.Authorize(req).Allowed, naive(cfg, bs, req); got != want {
				t.Fatalf("%+v: indexed %v, naive %v", req, got, want)
			}
		}
	})
}

func TestAuthorizeByResourceType(t *testing.T) {
	t.Parallel()
	const host = "10.0.0.1"
	cases := []struct {
		name string
		cfg  Config
		acls []Binding
		want bool
	}{
		{"no ACLs", Config{}, nil, false},
		{"no ACLs, allow everyone", Config{AllowIfNoACL: true}, nil, true},
		{"super user", Config{SuperUsers: []Principal{alice}}, nil, true},
		{"literal allow", Config{}, []Binding{allow(alice, "*", OpWrite, PatternLiteral, ResourceTopic, "t")}, true},
		{"prefixed allow", Config{}, []Binding{allow(alice, "*", OpWrite, PatternPrefixed, ResourceTopic, "p")}, true},
		{"wildcard allow", Config{}, []Binding{allow(WildcardPrincipal, "*", OpAll, PatternLiteral, ResourceTopic, "*")}, true},
		{"other principal", Config{}, []Binding{allow(bob, "*", OpWrite, PatternLiteral, ResourceTopic, "t")}, false},
		{"other host", Config{}, []Binding{allow(alice, "10.9.9.9", OpWrite, PatternLiteral, ResourceTopic, "t")}, false},
		{"no implication", Config{}, []Binding{allow(alice, "*", OpAlter, PatternLiteral, ResourceTopic, "t")}, false},
		{"other resource type", Config{}, []Binding{allow(alice, "*", OpWrite, PatternLiteral, ResourceGroup, "t")}, false},
		{"literal deny on the same name", Config{}, []Binding{
			allow(alice, "*", OpWrite, PatternLiteral, ResourceTopic, "t"),
			deny(alice, "*", OpWrite, PatternLiteral, ResourceTopic, "t"),
		}, false},
		{"prefixed deny dominates", Config{}, []Binding{
			allow(alice, "*", OpWrite, PatternLiteral, ResourceTopic, "team.t"),
			allow(alice, "*", OpWrite, PatternPrefixed, ResourceTopic, "team.x"),
			deny(alice, "*", OpWrite, PatternPrefixed, ResourceTopic, "team."),
		}, false},
		{"one allow not dominated", Config{}, []Binding{
			allow(alice, "*", OpWrite, PatternLiteral, ResourceTopic, "team.t"),
			allow(alice, "*", OpWrite, PatternLiteral, ResourceTopic, "other"),
			deny(alice, "*", OpWrite, PatternPrefixed, ResourceTopic, "team."),
		}, true},
		{"wildcard deny", Config{}, []Binding{
			allow(alice, "*", OpWrite, PatternLiteral, ResourceTopic, "t"),
			deny(WildcardPrincipal, "*", OpAll, PatternLiteral, ResourceTopic, "*"),
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := New(c.cfg)
			if err := a.Create(c.acls...); err != nil {
				t.Fatal(err)
			}
			if got := a.AuthorizeByResourceType(alice, host, OpWrite, ResourceTopic); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "t")
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Binding){
		"resource type any":     func(b *Binding) { b.Pattern.Type = ResourceAny },
		"resource type unknown": func(b *Binding) { b.Pattern.Type = ResourceUnknown },
		"delegation token":      func(b *Binding) { b.Pattern.Type = 6 },
		"pattern any":           func(b *Binding) { b.Pattern.PatternType = PatternAny },
		"pattern match":         func(b *Binding) { b.Pattern.PatternType = PatternMatch },
		"empty name":            func(b *Binding) { b.Pattern.Name = "" },
		"cluster name":          func(b *Binding) { b.Pattern = Pattern{ResourceCluster, "c", PatternLiteral} },
		"operation any":         func(b *Binding) { b.Entry.Operation = OpAny },
		"operation 15":          func(b *Binding) { b.Entry.Operation = 15 },
		"permission any":        func(b *Binding) { b.Entry.Permission = PermissionAny },
		"principal no type":     func(b *Binding) { b.Entry.Principal = "alice" },
		"principal empty name":  func(b *Binding) { b.Entry.Principal = "User:" },
		"empty host":            func(b *Binding) { b.Entry.Host = "" },
	}
	for name, mutate := range bad {
		b := ok
		mutate(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: %v validated", name, b)
		}
		if err := New(Config{}).Create(ok, b); err == nil {
			t.Errorf("%s: Create accepted it", name)
		}
	}
}

func TestCreateDeleteDescribe(t *testing.T) {
	t.Parallel()
	a := New(Config{})
	b1 := allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "t")
	b2 := allow(alice, "*", OpRead, PatternPrefixed, ResourceTopic, "t")
	b3 := deny(bob, "10.0.0.1", OpWrite, PatternLiteral, ResourceGroup, "g")
	if err := a.Create(b1, b2, b3, b1); err != nil { // a duplicate is a no-op
		t.Fatal(err)
	}
	if err := a.Create(b1); err != nil {
		t.Fatal(err)
	}
	if n := a.Set().Len(); n != 3 {
		t.Fatalf("len %d, want 3", n)
	}
	if !a.Allowed(alice, "1.1.1.1", OpRead, Topic("tx")) {
		t.Fatal("prefixed allow not in effect")
	}
	// Both filters match b1: it is reported under each, removed once.
	removed, errs := a.Delete(b1.Filter(), BindingFilter{
		Pattern: PatternFilter{Type: ResourceTopic, PatternType: PatternAny},
		Entry:   EntryFilter{Operation: OpAny, Permission: PermissionAny},
	}, BindingFilter{})
	if len(removed[0]) != 1 || len(removed[1]) != 2 || len(removed[2]) != 0 {
		t.Fatalf("removed %v", removed)
	}
	if errs == nil || errs[0] != nil || errs[1] != nil || errs[2] == nil {
		t.Fatalf("errs %v: want only the zero filter refused", errs)
	}
	if got := a.Set().Bindings(); len(got) != 1 || got[0] != b3 {
		t.Fatalf("left %v", got)
	}
	if a.Allowed(alice, "1.1.1.1", OpRead, Topic("tx")) {
		t.Fatal("deleted ACL still in effect")
	}
	// The old set is unchanged: Sets are immutable.
	old := mustSet(t, b1, b2)
	if _, _, _ = old.Without(AnyBinding); old.Len() != 2 {
		t.Fatal("Without changed its receiver")
	}
}

func TestParseEnums(t *testing.T) {
	t.Parallel()
	for v, name := range operationNames {
		if v == OpUnknown {
			continue
		}
		for _, s := range []string{name, strings.ToUpper(name), strings.ToLower(name)} {
			if got, err := ParseOperation(s); err != nil || got != v {
				t.Errorf("ParseOperation(%q) = %v, %v", s, got, err)
			}
		}
	}
	if got, err := ParseResourceType("transactional-id"); err != nil || got != ResourceTransactionalID {
		t.Errorf("transactional-id: %v %v", got, err)
	}
	if got, err := ParseResourceType("TRANSACTIONAL_ID"); err != nil || got != ResourceTransactionalID {
		t.Errorf("TRANSACTIONAL_ID: %v %v", got, err)
	}
	if _, err := ParseOperation("unknown"); err == nil {
		t.Error("unknown parsed")
	}
	if got := ParseSuperUsers(" User:a ; User:b;;"); fmt.Sprint(got) != "[User:a User:b]" {
		t.Errorf("ParseSuperUsers: %v", got)
	}
}

// TestConcurrentUse: checks run while ACLs change (run with -race); every
// check sees either the old set or the new one.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	a := New(Config{})
	grant := allow(alice, "*", OpRead, PatternPrefixed, ResourceTopic, "t")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			if err := a.Create(grant); err != nil {
				t.Error(err)
				return
			}
			a.Delete(grant.Filter())
		}
	}()
	for {
		select {
		case <-done:
			if a.Set().Len() != 0 {
				t.Fatalf("left %v", a.Set().Bindings())
			}
			return
		default:
			d := a.Authorize(Request{alice, "10.0.0.1", OpRead, Topic("tx")})
			if d.Reason != ReasonAllowACL && d.Reason != ReasonNoACL {
				t.Fatalf("torn state: %v", d.Reason)
			}
		}
	}
}
