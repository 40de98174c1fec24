package acl

import "testing"

func TestPatternFilterMatches(t *testing.T) {
	t.Parallel()
	lit := func(name string) Pattern { return Pattern{ResourceTopic, name, PatternLiteral} }
	pre := func(name string) Pattern { return Pattern{ResourceTopic, name, PatternPrefixed} }
	f := func(rt ResourceType, name *string, pt PatternType) PatternFilter { return PatternFilter{rt, name, pt} }
	cases := []struct {
		name   string
		filter PatternFilter
		yes    []Pattern
		no     []Pattern
	}{
		{"any type, any name, any pattern", f(ResourceAny, nil, PatternAny),
			[]Pattern{lit("a"), pre("a"), {ResourceGroup, "g", PatternLiteral}, Cluster().pattern()}, nil},
		{"resource type must equal", f(ResourceGroup, nil, PatternAny),
			[]Pattern{{ResourceGroup, "g", PatternPrefixed}}, []Pattern{lit("g")}},
		{"literal: exactly that name, literal only", f(ResourceTopic, new("foo"), PatternLiteral),
			[]Pattern{lit("foo")}, []Pattern{pre("foo"), lit("*"), lit("fo"), lit("foobar")}},
		{"literal filter for * selects the wildcard ACL only", f(ResourceTopic, new("*"), PatternLiteral),
			[]Pattern{lit("*")}, []Pattern{lit("foo")}},
		{"prefixed: exactly that prefix", f(ResourceTopic, new("foo"), PatternPrefixed),
			[]Pattern{pre("foo")}, []Pattern{pre("f"), lit("foo"), pre("foobar")}},
		{"any: that exact name, either type", f(ResourceTopic, new("foo"), PatternAny),
			[]Pattern{lit("foo"), pre("foo")}, []Pattern{lit("*"), pre("f")}},
		{"null name with a pattern type: every name of that type", f(ResourceTopic, nil, PatternPrefixed),
			[]Pattern{pre("a"), pre("b")}, []Pattern{lit("a")}},
		{"match: everything that would cover the name", f(ResourceTopic, new("foobar"), PatternMatch),
			[]Pattern{lit("foobar"), lit("*"), pre("foo"), pre("f"), pre("foobar")},
			[]Pattern{lit("foo"), pre("foobarx"), pre("bar"), {ResourceGroup, "foobar", PatternLiteral}}},
		{"match with null name: everything of the type", f(ResourceTopic, nil, PatternMatch),
			[]Pattern{lit("x"), pre("y"), lit("*")}, []Pattern{{ResourceGroup, "x", PatternLiteral}}},
		{"match with any type", f(ResourceAny, new("x"), PatternMatch),
			[]Pattern{lit("x"), {ResourceGroup, "*", PatternLiteral}}, []Pattern{lit("y")}},
		{"match for a name that is *", f(ResourceTopic, new("*"), PatternMatch),
			[]Pattern{lit("*"), pre("*")}, []Pattern{lit("a"), pre("a")}},
	}
	for _, c := range cases {
		expectMatches(t, c.name, c.filter.Matches, c.yes, c.no)
	}
}

// expectMatches checks that matches holds for each of yes and for none of no.
func expectMatches[T any](t *testing.T, name string, matches func(T) bool, yes, no []T) {
	t.Helper()
	for _, x := range yes {
		if !matches(x) {
			t.Errorf("%s: does not match %+v", name, x)
		}
	}
	for _, x := range no {
		if matches(x) {
			t.Errorf("%s: matches %+v", name, x)
		}
	}
}

func (r Resource) pattern() Pattern { return Pattern{r.Type, r.Name, PatternLiteral} }

func TestEntryFilterMatches(t *testing.T) {
	t.Parallel()
	e := Entry{alice, "10.0.0.1", OpRead, Allow}
	wild := Entry{WildcardPrincipal, "*", OpAll, Deny}
	anyEntry := EntryFilter{Operation: OpAny, Permission: PermissionAny}
	with := func(mut func(*EntryFilter)) EntryFilter { f := anyEntry; mut(&f); return f }
	cases := []struct {
		name   string
		filter EntryFilter
		yes    []Entry
		no     []Entry
	}{
		{"any", anyEntry, []Entry{e, wild}, nil},
		{"principal exact", with(func(f *EntryFilter) { f.Principal = new(alice) }), []Entry{e}, []Entry{wild}},
		{"User:* filter selects only User:* ACLs", with(func(f *EntryFilter) { f.Principal = new(WildcardPrincipal) }), []Entry{wild}, []Entry{e}},
		{"host exact", with(func(f *EntryFilter) { f.Host = new("10.0.0.1") }), []Entry{e}, []Entry{wild}},
		{"host canonicalized", with(func(f *EntryFilter) { f.Host = new("::ffff:10.0.0.1") }), []Entry{e}, nil},
		{"host * selects only * ACLs", with(func(f *EntryFilter) { f.Host = new("*") }), []Entry{wild}, []Entry{e}},
		{"operation exact, no implication", with(func(f *EntryFilter) { f.Operation = OpRead }), []Entry{e}, []Entry{wild}},
		{"operation All selects All ACLs only", with(func(f *EntryFilter) { f.Operation = OpAll }), []Entry{wild}, []Entry{e}},
		{"permission", with(func(f *EntryFilter) { f.Permission = Deny }), []Entry{wild}, []Entry{e}},
	}
	for _, c := range cases {
		expectMatches(t, c.name, c.filter.Matches, c.yes, c.no)
	}
}

func TestBindingFilterValidateAndIndefinite(t *testing.T) {
	t.Parallel()
	b := allow(alice, "*", OpRead, PatternPrefixed, ResourceTopic, "t")
	exact := b.Filter()
	if err := exact.Validate(); err != nil {
		t.Fatal(err)
	}
	if why := exact.IndefiniteField(); why != "" {
		t.Fatalf("exact filter indefinite: %s", why)
	}
	if !exact.Matches(b) {
		t.Fatal("a binding's filter does not match it")
	}
	if why := AnyBinding.IndefiniteField(); why == "" {
		t.Fatal("AnyBinding is definite")
	}
	m := exact
	m.Pattern.PatternType = PatternMatch
	if m.IndefiniteField() == "" {
		t.Fatal("a Match filter is definite")
	}
	invalid := map[string]func(*BindingFilter){
		"unknown resource type": func(f *BindingFilter) { f.Pattern.Type = ResourceUnknown },
		"resource type 99":      func(f *BindingFilter) { f.Pattern.Type = 99 },
		"unknown pattern type":  func(f *BindingFilter) { f.Pattern.PatternType = PatternUnknown },
		"unknown operation":     func(f *BindingFilter) { f.Entry.Operation = OpUnknown },
		"operation 20":          func(f *BindingFilter) { f.Entry.Operation = 20 },
		"unknown permission":    func(f *BindingFilter) { f.Entry.Permission = PermissionUnknown },
	}
	for name, mut := range invalid {
		f := AnyBinding
		mut(&f)
		if f.Validate() == nil {
			t.Errorf("%s: validated", name)
		}
	}
	if err := AnyBinding.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSetMatch(t *testing.T) {
	t.Parallel()
	s := mustSet(t,
		allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "foo"),
		allow(alice, "*", OpRead, PatternLiteral, ResourceTopic, "*"),
		allow(alice, "*", OpRead, PatternPrefixed, ResourceTopic, "fo"),
		deny(bob, "*", OpWrite, PatternPrefixed, ResourceTopic, "bar"),
		allow(bob, "*", OpRead, PatternLiteral, ResourceGroup, "foo"),
	)
	match := BindingFilter{Pattern: PatternFilter{ResourceTopic, new("foo"), PatternMatch}, Entry: AnyBinding.Entry}
	if got := s.Match(match); len(got) != 3 {
		t.Errorf("match foo: %v", got)
	}
	if got := s.Match(AnyBinding); len(got) != 5 {
		t.Errorf("any: %v", got)
	}
	denies := AnyBinding
	denies.Entry.Permission = Deny
	if got := s.Match(denies); len(got) != 1 || got[0].Entry.Principal != bob {
		t.Errorf("denies: %v", got)
	}
}

// FuzzACLFilter (D-T7): any filter, valid or not, is handled without a
// panic; a valid one deletes exactly what it describes, and what remains
// still decodes from its encoding.
func FuzzACLFilter(f *testing.F) {
	f.Add(int8(ResourceTopic), int8(PatternMatch), "orders", true, "User:alice", "*", int8(OpAny), int8(PermissionAny))
	f.Add(int8(ResourceAny), int8(PatternAny), "", false, "", "", int8(OpAny), int8(PermissionAny))
	f.Add(int8(0), int8(-3), "\xff", true, "User:*", "::ffff:10.0.0.1", int8(20), int8(9))
	f.Fuzz(func(t *testing.T, rt, pt int8, name string, hasName bool, principal, host string, op, perm int8) {
		flt := BindingFilter{
			Pattern: PatternFilter{Type: ResourceType(rt), PatternType: PatternType(pt)},
			Entry:   EntryFilter{Operation: Operation(op), Permission: Permission(perm)},
		}
		if hasName {
			flt.Pattern.Name = &name
		}
		if principal != "" {
			p := Principal(principal)
			flt.Entry.Principal = &p
		}
		if host != "" {
			flt.Entry.Host = &host
		}
		_ = flt.String()
		_ = flt.IndefiniteField()
		s := sampleSet(t)
		matched := s.Match(flt)
		next, removed, errs := s.Without(flt)
		if flt.Validate() != nil {
			if errs == nil || errs[0] == nil || next != s || len(removed[0]) != 0 {
				t.Fatalf("invalid filter %v acted", flt)
			}
			return
		}
		if len(removed[0]) != len(matched) || next.Len() != s.Len()-len(matched) {
			t.Fatalf("%v: matched %d, removed %d, left %d of %d", flt, len(matched), len(removed[0]), next.Len(), s.Len())
		}
		for _, b := range next.Bindings() {
			if flt.Matches(b) {
				t.Fatalf("%v: %v survived", flt, b)
			}
		}
		if _, err := Decode(next.Encode(nil)); err != nil {
			t.Fatal(err)
		}
	})
}
