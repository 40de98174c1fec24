// Package sasl authenticates Kafka clients the way Kafka's SASL listeners
// do: PLAIN (RFC 4616) and SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC
// 7677), against a fixed set of users and passwords and, through a Source,
// users whose SCRAM credentials are managed at run time (kept in the
// cluster metadata by the wire server's AlterUserScramCredentials; a
// PLAIN login of such a user is checked against its SCRAM credential with
// one PBKDF2), and OAUTHBEARER (RFC 7628, Kafka's KIP-255) with tokens
// validated as Kafka's KIP-768 validator does: signed JWTs checked against
// a JWKS (oauth.go, jwt.go, jwks.go). It parses and produces the
// mechanisms' messages; the wire server carries them in SaslHandshake and
// SaslAuthenticate. It must never speak the Kafka protocol; its only I/O
// is reading a JWKS, from a file or an identity provider's URL.
//
// Passwords are kept only as SCRAM credentials (salted, iterated, hashed)
// and, for PLAIN, as a SHA-256 digest compared in constant time.
package sasl

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
)

// Mechanism names, as clients ask for them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

var (
	// ErrUnsupportedMechanism: the client asked for a mechanism not enabled.
	ErrUnsupportedMechanism = errors.New("sasl: unsupported mechanism")
	// ErrAuthFailed: wrong user or password, or a malformed exchange. The
	// message never says which, so it cannot be used to probe for users.
	ErrAuthFailed = errors.New("sasl: authentication failed: invalid credentials")
)

// Users is the set of accounts a listener accepts: fixed ones given to
// New, and, through a Source, users managed at run time (the SCRAM
// credentials AlterUserScramCredentials stores in the cluster metadata).
// It is safe for concurrent use.
type Users struct {
	plain  map[string][32]byte // user → SHA-256(password)
	scram  map[string]map[string]scramCredential
	source Source // nil: the fixed users only
}

// Credential is a stored SCRAM credential (RFC 5802): never the password
// or the salted password.
type Credential struct {
	Salt                 []byte
	Iterations           int
	StoredKey, ServerKey []byte
}

// Source looks up a run-time user's credential for a SCRAM mechanism.
type Source func(user, mechanism string) (Credential, bool)

// WithSource returns u that also accepts the users src knows; a fixed user
// of the same name wins.
func (u *Users) WithSource(src Source) *Users {
	v := *u
	v.source = src
	return &v
}

// IsFixed reports whether user is one of the users given to New.
func (u *Users) IsFixed(user string) bool {
	_, ok := u.plain[user]
	return ok
}

// lookup finds user's credential for mechanism, fixed users first.
func (u *Users) lookup(user, mechanism string) (scramCredential, bool) {
	if c, ok := u.scram[mechanism][user]; ok {
		return c, true
	}
	if u.source == nil {
		return scramCredential{}, false
	}
	c, ok := u.source(user, mechanism)
	if !ok {
		return scramCredential{}, false
	}
	return scramCredential{salt: c.Salt, iterations: c.Iterations, storedKey: c.StoredKey, serverKey: c.ServerKey}, true
}

// DeriveCredential turns what AlterUserScramCredentials carries (salt,
// iterations, SaltedPassword = PBKDF2(password, salt, iterations)) into
// the credential kept: StoredKey = H(HMAC(salted, "Client Key")),
// ServerKey = HMAC(salted, "Server Key"). The salted password is not kept.
func DeriveCredential(mechanism string, salt []byte, iterations int, saltedPassword []byte) (Credential, error) {
	h, ok := hashes[mechanism]
	if !ok {
		return Credential{}, fmt.Errorf("%w: %q", ErrUnsupportedMechanism, mechanism)
	}
	return Credential{Salt: append([]byte(nil), salt...), Iterations: iterations,
		StoredKey: digest(h, mac(h, saltedPassword, "Client Key")), ServerKey: mac(h, saltedPassword, "Server Key")}, nil
}

// SaltPassword is PBKDF2(password, salt, iterations) with mechanism's hash:
// what a client sends in AlterUserScramCredentials.
func SaltPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h, ok := hashes[mechanism]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedMechanism, mechanism)
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// New derives every mechanism's credentials from user → password.
func New(passwords map[string]string) (*Users, error) {
	if len(passwords) == 0 {
		return nil, errors.New("sasl: no users")
	}
	u := &Users{plain: map[string][32]byte{}, scram: map[string]map[string]scramCredential{}}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		u.scram[m] = map[string]scramCredential{}
	}
	for user, pass := range passwords {
		if user == "" || strings.ContainsAny(user, "\x00") {
			return nil, fmt.Errorf("sasl: invalid user name %q", user)
		}
		if pass == "" {
			return nil, fmt.Errorf("sasl: user %q has an empty password", user)
		}
		u.plain[user] = sha256.Sum256([]byte(pass))
		for m := range u.scram {
			c, err := newScramCredential(hashes[m], pass)
			if err != nil {
				return nil, err
			}
			u.scram[m][user] = c
		}
	}
	return u, nil
}

// ParseUsers reads "user:password" lines; blank lines and lines starting
// with '#' are skipped. The password is everything after the first colon.
func ParseUsers(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, pass, ok := strings.Cut(line, ":")
		if !ok || user == "" || pass == "" {
			return nil, fmt.Errorf("line %d: want user:password", n)
		}
		if _, dup := out[user]; dup {
			return nil, fmt.Errorf("line %d: user %q listed twice", n, user)
		}
		out[user] = pass
	}
	return out, sc.Err()
}

// Mechanisms lists the enabled mechanisms, as SaslHandshake reports them.
func (u *Users) Mechanisms() []string { return []string{Plain, ScramSHA256, ScramSHA512} }

// Session is one client's authentication exchange.
type Session interface {
	// Step takes the client's next message and returns the server's reply;
	// done is set once the client is authenticated. An error ends the
	// exchange (ErrAuthFailed).
	Step(client []byte) (reply []byte, done bool, err error)
	// User is the authenticated user, once done.
	User() string
	// Claimed is the user name the client gave so far, authenticated or
	// not ("" before it gave one): for the log line of a failure.
	Claimed() string
}

// Start begins an exchange for mechanism.
func (u *Users) Start(mechanism string) (Session, error) {
	switch mechanism {
	case Plain:
		return &plainSession{u: u}, nil
	case ScramSHA256, ScramSHA512:
		return &scramSession{lookup: func(user string) (scramCredential, bool) { return u.lookup(user, mechanism) }, hash: hashes[mechanism]}, nil
	}
	return nil, fmt.Errorf("%w: %q (enabled: %s)", ErrUnsupportedMechanism, mechanism, strings.Join(u.Mechanisms(), ", "))
}

// plainSession is RFC 4616: one message, authzid NUL authcid NUL passwd.
type plainSession struct {
	u       *Users
	user    string
	claimed string
}

func (s *plainSession) Step(msg []byte) ([]byte, bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, ErrAuthFailed
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if authz != "" && authz != user {
		return nil, false, ErrAuthFailed // no impersonation
	}
	s.claimed = user
	if !s.u.Verify(user, string(pass)) {
		return nil, false, ErrAuthFailed
	}
	s.user = user
	return nil, true, nil
}

// Verify reports whether password is user's: a fixed user's is compared
// by digest in constant time, a run-time user's checked against its SCRAM
// credential (one PBKDF2). PLAIN and the HTTP listeners' basic
// authentication both ask it, so one store serves every surface and no
// plaintext password is kept.
func (u *Users) Verify(user, password string) bool {
	want, ok := u.plain[user]
	if !ok && u.source != nil {
		// A run-time user has only SCRAM credentials: the password is
		// checked against one (a PBKDF2, as a SCRAM client would do).
		return u.checkScram(user, password)
	}
	got := sha256.Sum256([]byte(password))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1 && ok
}

// checkScram verifies password against user's run-time SCRAM credential
// (SHA-512 first), comparing StoredKeys in constant time.
func (u *Users) checkScram(user, password string) bool {
	for _, m := range []string{ScramSHA512, ScramSHA256} {
		c, ok := u.source(user, m)
		if !ok {
			continue
		}
		salted, err := SaltPassword(m, password, c.Salt, c.Iterations)
		if err != nil {
			return false
		}
		d, _ := DeriveCredential(m, c.Salt, c.Iterations, salted)
		return hmac.Equal(d.StoredKey, c.StoredKey)
	}
	return false
}

func (s *plainSession) User() string { return s.user }

func (s *plainSession) Claimed() string { return s.claimed }
