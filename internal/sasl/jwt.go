package sasl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	_ "crypto/sha256" // registers SHA-256 for crypto.Hash
	_ "crypto/sha512" // registers SHA-384 and SHA-512
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// A compact JWS (RFC 7515 §7.1) is three base64url parts joined by dots:
//
//	base64url(header) "." base64url(claims) "." base64url(signature)
//
// The signature covers the first two parts exactly as sent. The header
// names the algorithm ("alg") and the key ("kid"); the claims are a JSON
// object (RFC 7519).

// maxTokenBytes bounds a token: far above any real access token, far
// below the pre-authentication frame limit.
const maxTokenBytes = 64 << 10

// jws is a parsed, not yet verified, compact JWS.
type jws struct {
	alg, kid  string
	claims    map[string]json.RawMessage
	signed    string // header "." claims: what the signature covers
	signature []byte
}

type jwsHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Crit []string `json:"crit"`
}

// parseJWS splits and decodes a compact JWS without verifying it.
func parseJWS(token string) (*jws, error) {
	if len(token) > maxTokenBytes {
		return nil, fmt.Errorf("token of %d bytes", len(token))
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%d dot-separated parts, want 3 (a compact JWS)", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	var h jwsHeader
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if h.Alg == "" {
		return nil, errors.New(`header has no "alg"`)
	}
	if len(h.Crit) > 0 {
		// RFC 7515 §4.1.11: extensions the recipient does not understand
		// make the JWS invalid, and Strand understands none.
		return nil, fmt.Errorf("header has critical extensions %v", h.Crit)
	}
	raw, err = base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(raw, &claims); err != nil || claims == nil {
		return nil, fmt.Errorf("claims are not a JSON object: %v", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	return &jws{alg: h.Alg, kid: h.Kid, claims: claims, signed: parts[0] + "." + parts[1], signature: sig}, nil
}

// algorithm is one JWA signature algorithm (RFC 7518 §3) Strand verifies.
type algorithm struct {
	hash crypto.Hash
	pss  bool // RSASSA-PSS; else PKCS #1 v1.5 for RSA
	ec   int  // ECDSA: the curve's bit size; 0 for RSA
}

var algorithms = map[string]algorithm{
	"RS256": {hash: crypto.SHA256},
	"RS384": {hash: crypto.SHA384},
	"RS512": {hash: crypto.SHA512},
	"PS256": {hash: crypto.SHA256, pss: true},
	"PS384": {hash: crypto.SHA384, pss: true},
	"PS512": {hash: crypto.SHA512, pss: true},
	"ES256": {hash: crypto.SHA256, ec: 256},
	"ES384": {hash: crypto.SHA384, ec: 384},
	"ES512": {hash: crypto.SHA512, ec: 521},
}

// keyFits reports whether key may verify alg: an RSA key for RS*/PS*, an
// EC key on the algorithm's own curve for ES*.
func keyFits(key any, alg string) bool {
	a, ok := algorithms[alg]
	if !ok {
		return false
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		return a.ec == 0
	case *ecdsa.PublicKey:
		return a.ec != 0 && k.Curve.Params().BitSize == a.ec
	}
	return false
}

// verify checks the signature with key.
func (t *jws) verify(key any) error {
	a, ok := algorithms[t.alg]
	if !ok || !keyFits(key, t.alg) {
		return fmt.Errorf("key does not fit algorithm %s", t.alg)
	}
	h := a.hash.New()
	h.Write([]byte(t.signed))
	digest := h.Sum(nil)
	switch k := key.(type) {
	case *rsa.PublicKey:
		if a.pss {
			return rsa.VerifyPSS(k, a.hash, digest, t.signature, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		}
		return rsa.VerifyPKCS1v15(k, a.hash, digest, t.signature)
	case *ecdsa.PublicKey:
		// RFC 7518 §3.4: R and S, each as long as the curve's order,
		// concatenated (not ASN.1).
		size := (a.ec + 7) / 8
		if len(t.signature) != 2*size {
			return fmt.Errorf("ECDSA signature of %d bytes, want %d", len(t.signature), 2*size)
		}
		r := new(big.Int).SetBytes(t.signature[:size])
		s := new(big.Int).SetBytes(t.signature[size:])
		if !ecdsa.Verify(k, digest, r, s) {
			return errors.New("ECDSA signature does not verify")
		}
		return nil
	}
	return errors.New("unsupported key type")
}
