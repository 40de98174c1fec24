package acl

import (
	"fmt"
	"regexp"
	"strings"
)

// Anonymous is the principal of a connection that did not authenticate
// (no SASL, no verified client certificate), as Kafka names it.
const Anonymous Principal = "User:ANONYMOUS"

// PrincipalRules maps a TLS client certificate's subject distinguished name
// to a user name, with the syntax and semantics of Kafka's
// ssl.principal.mapping.rules (KIP-371, SslPrincipalMapper): a
// comma-separated list of
//
//	RULE:pattern/replacement/[L|U]
//	DEFAULT
//
// tried in order. The first RULE whose pattern matches the whole DN gives
// replacement with $1, $2, … expanded (then lower- or upper-cased with L or
// U); DEFAULT gives the DN unchanged. When no rule applies (a list without
// DEFAULT), Map reports it and the connection fails, as in Kafka. A nil
// *PrincipalRules is "DEFAULT".
type PrincipalRules struct {
	rules []principalRule
}

type principalRule struct {
	isDefault   bool
	pattern     *regexp.Regexp
	replacement string
	toLower     bool
	toUpper     bool
}

// ParsePrincipalRules reads an ssl.principal.mapping.rules value. An empty
// value is "DEFAULT".
func ParsePrincipalRules(s string) (*PrincipalRules, error) {
	pr := &PrincipalRules{}
	rest := strings.TrimSpace(s)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			pr.rules = append(pr.rules, principalRule{isDefault: true})
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			rest = rest[len("RULE:"):]
			pattern, after, ok := cutUnescaped(rest, '/')
			if !ok {
				return nil, fmt.Errorf("acl: principal mapping rule %q: missing '/' after the pattern", s)
			}
			replacement, after, ok := cutUnescaped(after, '/')
			if !ok {
				return nil, fmt.Errorf("acl: principal mapping rule %q: missing '/' after the replacement", s)
			}
			r := principalRule{replacement: replacement}
			if strings.HasPrefix(after, "L") {
				r.toLower, after = true, after[1:]
			} else if strings.HasPrefix(after, "U") {
				r.toUpper, after = true, after[1:]
			}
			re, err := regexp.Compile("^(?:" + pattern + ")$")
			if err != nil {
				return nil, fmt.Errorf("acl: principal mapping rule pattern %q: %w", pattern, err)
			}
			r.pattern = re
			pr.rules = append(pr.rules, r)
			rest = after
		default:
			return nil, fmt.Errorf("acl: principal mapping rules: cannot parse %q (want RULE:pattern/replacement/[LU] or DEFAULT)", rest)
		}
		rest = strings.TrimSpace(rest)
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("acl: principal mapping rules: want ',' before %q", rest)
		}
		rest = strings.TrimSpace(rest[1:])
	}
	return pr, nil
}

// cutUnescaped splits s at the first sep not preceded by a backslash, and
// unescapes "\sep" in the part before it.
func cutUnescaped(s string, sep byte) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] == sep {
				i++
			}
		case sep:
			return strings.ReplaceAll(s[:i], `\`+string(sep), string(sep)), s[i+1:], true
		}
	}
	return "", "", false
}

// Map returns the principal for a certificate subject DN (as RFC 2253
// renders it, most specific first: "CN=client,OU=eng,O=acme"); false when
// no rule applies.
func (pr *PrincipalRules) Map(dn string) (Principal, bool) {
	if pr == nil {
		return User(dn), true
	}
	for _, r := range pr.rules {
		if r.isDefault {
			return User(dn), true
		}
		m := r.pattern.FindStringSubmatchIndex(dn)
		if m == nil {
			continue
		}
		name := string(r.pattern.ExpandString(nil, r.replacement, dn, m))
		switch {
		case r.toLower:
			name = strings.ToLower(name)
		case r.toUpper:
			name = strings.ToUpper(name)
		}
		return User(name), true
	}
	return "", false
}
