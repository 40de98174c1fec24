package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"hash"
	"strconv"
	"strings"
)

// scramIterations is the PBKDF2 iteration count of derived credentials:
// Kafka's minimum (and librdkafka's expectation) is 4096.
const scramIterations = 4096

var hashes = map[string]func() hash.Hash{
	ScramSHA256: sha256.New,
	ScramSHA512: sha512.New,
}

// scramCredential is what RFC 5802 lets a server store instead of the
// password.
type scramCredential struct {
	salt                 []byte
	iterations           int
	storedKey, serverKey []byte
}

func newScramCredential(h func() hash.Hash, password string) (scramCredential, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return scramCredential{}, err
	}
	salted, err := pbkdf2.Key(h, password, salt, scramIterations, h().Size())
	if err != nil {
		return scramCredential{}, err
	}
	clientKey := mac(h, salted, "Client Key")
	return scramCredential{salt: salt, iterations: scramIterations,
		storedKey: digest(h, clientKey), serverKey: mac(h, salted, "Server Key")}, nil
}

// decoySecret keys the decoy salts of this process.
var decoySecret = randomBytes(32)

// decoyCredential is what an unknown user is answered with, so that a client
// cannot tell which users exist: a salt that, as a real user's, is the same
// on every try (derived from the name with a per-process key) and the usual
// iteration count. It has no keys, so no proof verifies, and it costs no
// PBKDF2: answering it takes as long as answering a real user.
func decoyCredential(user string) scramCredential {
	return scramCredential{salt: mac(sha256.New, decoySecret, user)[:16], iterations: scramIterations}
}

func mac(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func digest(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

// scramSession is the server side of RFC 5802: client-first → server-first,
// client-final → server-final.
type scramSession struct {
	lookup func(user string) (scramCredential, bool)
	hash   func() hash.Hash

	step        int
	user        string
	cred        scramCredential
	gs2         string // the client's GS2 header, echoed in c=
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // client nonce + server nonce
}

func (s *scramSession) User() string {
	if s.step < 2 {
		return ""
	}
	return s.user
}

func (s *scramSession) Claimed() string { return s.user }

func (s *scramSession) Step(msg []byte) ([]byte, bool, error) {
	switch s.step {
	case 0:
		reply, err := s.first(string(msg))
		if err != nil {
			return nil, false, err
		}
		s.step = 1
		return []byte(reply), false, nil
	case 1:
		reply, err := s.final(string(msg))
		if err != nil {
			return nil, false, err
		}
		s.step = 2
		return []byte(reply), true, nil
	}
	return nil, false, ErrAuthFailed
}

// first parses "n,,n=user,r=nonce" (a GS2 header without channel binding)
// and answers "r=nonce+ours,s=salt,i=iterations".
func (s *scramSession) first(msg string) (string, error) {
	parts := strings.SplitN(msg, ",", 3)
	if len(parts) != 3 || (parts[0] != "n" && parts[0] != "y") {
		return "", ErrAuthFailed // "p=" (channel binding) is not offered
	}
	s.gs2 = parts[0] + "," + parts[1] + ","
	s.clientFirst = parts[2]
	attrs := attributes(s.clientFirst)
	user, ok := unescapeName(attrs["n"])
	cnonce := attrs["r"]
	if !ok || user == "" || cnonce == "" || (parts[1] != "" && parts[1] != "a="+attrs["n"]) {
		return "", ErrAuthFailed
	}
	cred, known := s.lookup(user)
	if !known {
		cred = decoyCredential(user)
	}
	s.user, s.cred = user, cred
	s.nonce = cnonce + base64.RawStdEncoding.EncodeToString(randomBytes(18))
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.salt) + ",i=" + strconv.Itoa(cred.iterations)
	return s.serverFirst, nil
}

// final checks "c=gs2,r=nonce,p=proof" and answers "v=serversignature".
func (s *scramSession) final(msg string) (string, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return "", ErrAuthFailed
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := attributes(withoutProof)
	// The nonce must end with ours: librdkafka (before 2.x's fix) sends its
	// own nonce in front of the whole server nonce, and Kafka's server
	// accepts that with the same test, so Strand does too. The proof still
	// covers exactly what the client sent.
	if attrs["c"] != base64.StdEncoding.EncodeToString([]byte(s.gs2)) || !strings.HasSuffix(attrs["r"], s.nonce) {
		return "", ErrAuthFailed
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || s.cred.storedKey == nil || len(proof) != len(s.cred.storedKey) {
		return "", ErrAuthFailed
	}
	authMessage := s.clientFirst + "," + s.serverFirst + "," + withoutProof
	clientSig := mac(s.hash, s.cred.storedKey, authMessage)
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ clientSig[j]
	}
	if !hmac.Equal(digest(s.hash, clientKey), s.cred.storedKey) {
		return "", ErrAuthFailed
	}
	return "v=" + base64.StdEncoding.EncodeToString(mac(s.hash, s.cred.serverKey, authMessage)), nil
}

// attributes splits "k=v,k=v" (values may contain '=').
func attributes(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && len(k) == 1 {
			out[k] = v
		}
	}
	return out
}

// unescapeName decodes RFC 5802's saslname: "=2C" is ',' and "=3D" is '=';
// any other '=' is malformed.
func unescapeName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
