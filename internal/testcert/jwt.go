package testcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
)

// JWTKey is a throwaway signing key of an identity provider, for tests of
// OAUTHBEARER: it signs compact JWS tokens and describes itself as a JWK.
type JWTKey struct {
	Kid string
	Alg string // RS256 or ES256
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
}

// NewRSAJWTKey makes a 2048-bit RSA key that signs RS256.
func NewRSAJWTKey(kid string) (*JWTKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("testcert: %w", err)
	}
	return &JWTKey{Kid: kid, Alg: "RS256", rsa: k}, nil
}

// NewECJWTKey makes a P-256 key that signs ES256.
func NewECJWTKey(kid string) (*JWTKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testcert: %w", err)
	}
	return &JWTKey{Kid: kid, Alg: "ES256", ec: k}, nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// JWK is the key's public half as a JWKS entry.
func (k *JWTKey) JWK() map[string]any {
	if k.rsa != nil {
		return map[string]any{"kty": "RSA", "kid": k.Kid, "use": "sig", "alg": k.Alg,
			"n": b64(k.rsa.N.Bytes()), "e": b64(big.NewInt(int64(k.rsa.E)).Bytes())}
	}
	pub, _ := k.ec.PublicKey.Bytes() // 0x04 || X || Y
	return map[string]any{"kty": "EC", "kid": k.Kid, "use": "sig", "crv": "P-256",
		"x": b64(pub[1:33]), "y": b64(pub[33:])}
}

// JWKS is a JSON Web Key Set of keys' public halves.
func JWKS(keys ...*JWTKey) []byte {
	var set []map[string]any
	for _, k := range keys {
		set = append(set, k.JWK())
	}
	out, _ := json.Marshal(map[string]any{"keys": set})
	return out
}

// Sign makes a compact JWS of claims, with the key's alg and kid in the
// header.
func (k *JWTKey) Sign(claims map[string]any) string {
	return k.SignHeader(map[string]any{"alg": k.Alg, "kid": k.Kid, "typ": "JWT"}, claims)
}

// SignHeader is Sign with a header of the test's choosing; the signature
// is the key's own algorithm whatever the header says.
func (k *JWTKey) SignHeader(header, claims map[string]any) string {
	signed := Encode(header) + "." + Encode(claims)
	digest := sha256.Sum256([]byte(signed))
	var sig []byte
	if k.rsa != nil {
		sig, _ = rsa.SignPKCS1v15(rand.Reader, k.rsa, crypto.SHA256, digest[:])
	} else {
		r, s, _ := ecdsa.Sign(rand.Reader, k.ec, digest[:])
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	}
	return signed + "." + b64(sig)
}

// Encode is the base64url of v's JSON: one part of a compact JWS.
func Encode(v any) string {
	out, _ := json.Marshal(v)
	return b64(out)
}

// Unsecured makes an unsigned token (alg "none", an empty signature).
func Unsecured(claims map[string]any) string {
	return Encode(map[string]any{"alg": "none"}) + "." + Encode(claims) + "."
}

// RSAModulus is the RSA key's modulus bytes, what an attacker would use as
// the HMAC secret in an algorithm-confusion forgery; nil for an EC key.
func (k *JWTKey) RSAModulus() []byte {
	if k.rsa == nil {
		return nil
	}
	return k.rsa.N.Bytes()
}
