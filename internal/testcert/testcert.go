// Package testcert makes throwaway TLS certificates for tests: a CA, and
// server and client certificates it signs, for loopback; and an identity
// provider's JWT signing keys and JWKS, for OAUTHBEARER (jwt.go). It is for tests
// only: keys are generated per call and never leave memory unless a test
// writes them out.
package testcert

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/strandmq/strand/internal/nodetls"
)

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// Leaf is a signed certificate and its key.
type Leaf struct {
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
}

// NewCA returns a fresh CA valid for a day.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "strand test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

// Pool is a cert pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server signs a server certificate for localhost and 127.0.0.1.
func (ca *CA) Server() (*Leaf, error) {
	return ca.leaf(leafSpec{cn: "localhost", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
}

// Client signs a client certificate with common name cn.
func (ca *CA) Client(cn string) (*Leaf, error) {
	return ca.leaf(leafSpec{cn: cn, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// Node signs cluster node id's certificate (both ends of a connection,
// naming the node as internal/nodetls reads it), valid for validFor from
// now (zero: a day).
func (ca *CA) Node(id int32, validFor time.Duration) (*Leaf, error) {
	return ca.leaf(leafSpec{cn: nodetls.NodeCommonName(id), uris: []*url.URL{nodetls.NodeURI(id)}, validFor: validFor,
		usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
}

// WriteFiles writes the leaf's certificate and key as dir/name.crt and
// dir/name.key, and returns their paths.
func (l *Leaf) WriteFiles(dir, name string) (cert, key string, err error) {
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err = os.WriteFile(cert, l.CertPEM, 0o644); err == nil {
		err = os.WriteFile(key, l.KeyPEM, 0o600)
	}
	return cert, key, err
}

// WriteFile writes the CA's certificate as dir/name.crt and returns its
// path.
func (ca *CA) WriteFile(dir, name string) (string, error) {
	p := filepath.Join(dir, name+".crt")
	return p, os.WriteFile(p, ca.CertPEM, 0o644)
}

type leafSpec struct {
	cn       string
	uris     []*url.URL
	usages   []x509.ExtKeyUsage
	validFor time.Duration
}

var serial = big.NewInt(1)

func (ca *CA) leaf(spec leafSpec) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(serial, 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: spec.cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(cmp.Or(spec.validFor, 24*time.Hour)),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  spec.usages,
		URIs:         spec.uris,
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	l := &Leaf{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}
	if l.TLS, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
		return nil, fmt.Errorf("testcert: %w", err)
	}
	return l, nil
}

// Set is a CA with a server certificate and one client certificate.
type Set struct {
	CA             *CA
	Server, Client *Leaf
}

// MustSet makes a Set whose client certificate has common name clientCN,
// failing the test (any value with Fatal) on error.
func MustSet(t interface{ Fatal(...any) }, clientCN string) Set {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Server()
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client(clientCN)
	if err != nil {
		t.Fatal(err)
	}
	return Set{CA: ca, Server: server, Client: client}
}
