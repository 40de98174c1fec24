package acl

import (
	"strings"
	"testing"
)

// TestPrincipalRules: KIP-371's examples and edge cases — first matching
// rule wins, $n expansion, L/U case folding, escaped slashes, DEFAULT, and
// no match without DEFAULT.
func TestPrincipalRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		rules, dn string
		want      Principal
		ok        bool
	}{
		{"", "CN=client,O=acme", "User:CN=client,O=acme", true},
		{"DEFAULT", "CN=client,O=acme", "User:CN=client,O=acme", true},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT`, "CN=svc,OU=ServiceUsers,O=acme", "User:svc", true},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT`, "CN=bob,OU=People,O=acme", "User:CN=bob,OU=People,O=acme", true},
		{`RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L, DEFAULT`, "CN=Duke,OU=JavaSoft,O=Sun", "User:duke@javasoft", true},
		{`RULE:^CN=(.*?),OU=(.*?)$/$1/U`, "CN=duke,OU=x", "User:DUKE", true},
		{`RULE:^CN=(.*?)\/x,O=.*$/$1/`, "CN=a/x,O=b", "User:a", true},
		{`RULE:^CN=(.*?),O=z$/$1/`, "CN=a,O=b", "", false},
	}
	for _, c := range cases {
		pr, err := ParsePrincipalRules(c.rules)
		if err != nil {
			t.Fatalf("%q: %v", c.rules, err)
		}
		got, ok := pr.Map(c.dn)
		if got != c.want || ok != c.ok {
			t.Errorf("rules %q, dn %q: got %q %v, want %q %v", c.rules, c.dn, got, ok, c.want, c.ok)
		}
	}
	for _, bad := range []string{"RULE:abc", "RULE:a/b", "NOPE", "DEFAULT DEFAULT", "RULE:(/x/"} {
		if _, err := ParsePrincipalRules(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzPrincipalRules: no rules text panics the parser, and no DN panics a
// parsed rule set's Map; a mapped principal is always "User:" + a name.
func FuzzPrincipalRules(f *testing.F) {
	f.Add(`RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT`, "CN=Duke,OU=JavaSoft")
	f.Add(`RULE:^CN=(.*?)\/x$/$1/U`, "CN=a/x")
	f.Add("DEFAULT", "")
	f.Fuzz(func(t *testing.T, rules, dn string) {
		pr, err := ParsePrincipalRules(rules)
		if err != nil {
			return
		}
		if p, ok := pr.Map(dn); ok && !strings.HasPrefix(string(p), "User:") {
			t.Fatalf("rules %q mapped %q to %q", rules, dn, p)
		}
	})
}
