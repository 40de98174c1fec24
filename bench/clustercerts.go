package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/strandmq/strand"
)

// clusterTLS writes a CA and a certificate for each of nodes 1..n into dir,
// named as `strand cert` names them (CN node-<id>, URI SAN
// strand://node/<id>), and returns each node's InterNodeTLS.
func clusterTLS(dir string, n int) ([]*strand.InterNodeTLS, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	caFile := filepath.Join(dir, "ca.crt")
	if err := writePEM(caFile, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	var out []*strand.InterNodeTLS
	for id := 1; id <= n; id++ {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(id + 1)), Subject: pkix.Name{CommonName: fmt.Sprint("node-", id)},
			URIs:      []*url.URL{{Scheme: "strand", Host: "node", Path: fmt.Sprint("/", id)}},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return nil, err
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		base := filepath.Join(dir, fmt.Sprint("node-", id))
		if err := writePEM(base+".crt", "CERTIFICATE", der); err != nil {
			return nil, err
		}
		if err := writePEM(base+".key", "PRIVATE KEY", kder); err != nil {
			return nil, err
		}
		out = append(out, &strand.InterNodeTLS{CertFile: base + ".crt", KeyFile: base + ".key", CAFile: caFile})
	}
	return out, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
