package sasl

// CVE-2021-38153 (issue 16, TXN-848 D.5): Kafka compared SCRAM proofs and
// passwords with Arrays.equals, which returns at the first differing
// byte, so response times leaked how much of a guess was right. Strand's
// rule: secrets are compared only with hmac.Equal or
// subtle.ConstantTimeCompare. This file checks it on the source.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// secretSources are where credentials, proofs and tokens are compared:
// this package (PLAIN and SCRAM), the wire server's SASL and SCRAM
// credential handlers, the HTTP listeners' basic authentication and the
// console's CSRF token check. Paths are relative to this package.
var secretSources = []string{
	".",
	"../httpauth",
	"../console",
	"../kafka/sasl.go",
	"../kafka/50_scram_credentials.go",
}

// secretName matches the identifiers that hold a secret or something
// derived from one, by their lower-cased name: passwords, proofs,
// signatures, SCRAM keys, salted passwords, digests, MACs, tokens.
var secretName = regexp.MustCompile(`^(pass|passwd|password|pw|pwd|secret|token|csrf|proof|sig|signature|mac|hmac|digest|salted|saltedpassword|storedkey|serverkey|clientkey|clientsig|clientsignature|serversig|serversignature)$|password|passwd|secret|token|proof|signature|storedkey|serverkey|clientkey|salted|digest|csrf`)

// variableTimeCalls are the comparisons that return at the first
// difference.
var variableTimeCalls = map[string]bool{
	"bytes.Equal": true, "bytes.Compare": true, "bytes.EqualFold": true, "bytes.HasPrefix": true, "bytes.HasSuffix": true,
	"strings.Compare": true, "strings.EqualFold": true, "strings.HasPrefix": true, "strings.HasSuffix": true,
	"reflect.DeepEqual": true, "slices.Equal": true, "slices.Compare": true, "maps.Equal": true,
}

// mentionsSecret reports the secret identifier e uses, if any. What only
// measures a secret (len, cap) or is a nil or empty-string check leaks
// nothing about its bytes and does not count.
func mentionsSecret(e ast.Expr) string {
	found := ""
	ast.Inspect(e, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "len" || id.Name == "cap") {
				return false
			}
			// The result of a constant-time comparison is no secret.
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "subtle" || pkg.Name == "hmac" && sel.Sel.Name == "Equal") {
					return false
				}
			}
		case *ast.Ident:
			if secretName.MatchString(strings.ToLower(n.Name)) {
				found = n.Name
			}
		}
		return true
	})
	return found
}

// harmless reports an operand that makes a comparison safe: nil, or the
// empty string (an emptiness check).
func harmless(e ast.Expr) bool {
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return true
	}
	lit, ok := e.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING && (lit.Value == `""` || lit.Value == "``")
}

// secretCompares lists the variable-time comparisons of secrets in one
// parsed file: ==, != and the calls of variableTimeCalls.
func secretCompares(fset *token.FileSet, f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ || harmless(n.X) || harmless(n.Y) {
				return true
			}
			for _, side := range []ast.Expr{n.X, n.Y} {
				if s := mentionsSecret(side); s != "" {
					out = append(out, fmt.Sprintf("%s: %s applied to %s", fset.Position(n.OpPos), n.Op, s))
					break
				}
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || !variableTimeCalls[pkg.Name+"."+sel.Sel.Name] {
				return true
			}
			for _, a := range n.Args {
				if s := mentionsSecret(a); s != "" {
					out = append(out, fmt.Sprintf("%s: %s.%s applied to %s", fset.Position(n.Pos()), pkg.Name, sel.Sel.Name, s))
					break
				}
			}
		}
		return true
	})
	return out
}

// TestCVE_2021_38153_ConstantTimeCompare: no password, proof, key,
// signature, digest or token is compared with ==, != or bytes.Equal (or
// another comparison that stops at the first difference) in the code that
// checks credentials; only hmac.Equal and subtle.ConstantTimeCompare. The
// sub-tests show the check catches what it must and passes what it may.
func TestCVE_2021_38153_ConstantTimeCompare(t *testing.T) {
	t.Parallel()
	t.Run("detector", func(t *testing.T) {
		for _, tc := range []struct {
			name, body string
			flagged    bool
		}{
			{"bytes.Equal on a proof", `if !bytes.Equal(digest(h, clientKey), s.cred.storedKey) { return err }`, true},
			{"== on a password", `if pass == want { ok = true }`, true},
			{"!= on a stored password string", `if string(got) != u.password { return false }`, true},
			{"== on a csrf token", `if r.PostForm.Get("csrf") != c.token { deny() }`, true},
			{"reflect.DeepEqual on a signature", `ok := reflect.DeepEqual(sig, want)`, true},
			{"strings.EqualFold on a secret", `ok := strings.EqualFold(secret, guess)`, true},
			{"hmac.Equal", `if !hmac.Equal(digest(h, clientKey), s.cred.storedKey) { return err }`, false},
			{"subtle", `ok := subtle.ConstantTimeCompare(got[:], want[:]) == 1`, false},
			{"subtle on a token", `if subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) != 1 { deny() }`, false},
			{"hmac.Equal's result", `if hmac.Equal(proof, want) == false { deny() }`, false},
			{"bytes.Equal inside a constant-time call", `ok := subtle.ConstantTimeEq(int32(len(a)), 1) == 1 && bytes.Equal(proof, want)`, true},
			{"length check", `if len(proof) != len(s.cred.storedKey) { return err }`, false},
			{"nil check", `if s.cred.storedKey == nil { return err }`, false},
			{"empty password check", `if pass == "" { return err }`, false},
			{"user names", `if authz != "" && authz != user { return err }`, false},
			{"mechanism", `if mechanism == ScramSHA256 || parts[0] != "n" { return nil }`, false},
		} {
			src := "package p\nfunc f() {\n" + tc.body + "\n}\n"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "snippet.go", src, 0)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := secretCompares(fset, f); (len(got) > 0) != tc.flagged {
				t.Errorf("%s: flagged %v, want flagged=%v", tc.name, got, tc.flagged)
			}
		}
	})

	fset := token.NewFileSet()
	files := 0
	var found []string
	for _, src := range secretSources {
		paths := []string{src}
		if st, err := os.Stat(src); err != nil {
			t.Fatalf("%s: %v", src, err)
		} else if st.IsDir() {
			if paths, err = filepath.Glob(filepath.Join(src, "*.go")); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files++
			found = append(found, secretCompares(fset, f)...)
		}
	}
	if files < 6 {
		t.Fatalf("only %d files checked", files)
	}
	for _, f := range found {
		t.Errorf("variable-time comparison of a secret (use hmac.Equal or subtle.ConstantTimeCompare): %s", f)
	}
	t.Logf("%d files checked, %d variable-time comparisons of secrets", files, len(found))
}
