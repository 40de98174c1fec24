package nodetls

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Files names a key pair and the CA bundle that verifies peers.
type Files struct {
	Cert, Key, CA string
}

// material is one consistent reading of Files: a certificate is never
// paired with a CA pool or key from another reading.
type material struct {
	pair  *tls.Certificate
	leaf  *x509.Certificate
	pool  *x509.CertPool
	cas   []*x509.Certificate
	stamp [sha256.Size]byte // of the three files' bytes: what a reload compares
}

// Source is a key pair and a CA pool read from files and read again on
// Reload, or by Watch when a file changes. Every handshake takes the
// material current at its start, so renewed certificates reach new
// connections without a restart; connections made before keep theirs
// until one side's certificate expires (Conn closes them then).
//
// Safe for concurrent use.
type Source struct {
	files  Files
	self   int32 // the node the certificate must name; -1: any certificate
	logger *slog.Logger
	cur    atomic.Pointer[material]

	reloadMu sync.Mutex
	refusals refusalLog
}

// Load reads files. When self ≥ 0 the certificate must name node self (a
// node's own certificate); -1 accepts any certificate the CA signed.
func Load(files Files, self int32, logger *slog.Logger) (*Source, error) {
	if files.Cert == "" || files.Key == "" || files.CA == "" {
		return nil, errors.New("nodetls: a certificate, its key and the cluster CA are all needed")
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Source{files: files, self: self, logger: logger}
	m, err := s.read()
	if err != nil {
		return nil, err
	}
	s.cur.Store(m)
	return s, nil
}

// read loads and checks the files: the key matches the certificate, the
// CA verifies the certificate for both ends of a connection, and the
// certificate names this node.
func (s *Source) read() (*material, error) {
	raw, stamp, err := readFiles(s.files.Cert, s.files.Key, s.files.CA)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, caPEM := raw[0], raw[1], raw[2]
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("nodetls: %s and %s: %w", s.files.Cert, s.files.Key, err)
	}
	cas, err := parseCerts(caPEM)
	if err != nil || len(cas) == 0 {
		return nil, fmt.Errorf("nodetls: %s holds no CA certificate (%v)", s.files.CA, err)
	}
	m := &material{pair: &pair, leaf: pair.Leaf, pool: x509.NewCertPool(), cas: cas, stamp: stamp}
	for _, ca := range cas {
		m.pool.AddCert(ca)
	}
	if err := m.verifyOwn(s.self); err != nil {
		return nil, fmt.Errorf("nodetls: %s: %w", s.files.Cert, err)
	}
	return m, nil
}

// readFiles reads each named file ("" reads as empty) and returns their
// bytes and a digest of them all, which tells a reload whether anything
// changed.
func readFiles(paths ...string) ([][]byte, [sha256.Size]byte, error) {
	var stamp [sha256.Size]byte
	h := sha256.New()
	out := make([][]byte, len(paths))
	for i, p := range paths {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, stamp, fmt.Errorf("nodetls: %w", err)
		}
		out[i] = b
		h.Write(b)
	}
	h.Sum(stamp[:0])
	return out, stamp, nil
}

func (m *material) verifyOwn(self int32) error {
	inter := x509.NewCertPool()
	for _, c := range m.pair.Certificate[1:] {
		if ic, err := x509.ParseCertificate(c); err == nil {
			inter.AddCert(ic)
		}
	}
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if self >= 0 {
		usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	for _, u := range usages {
		if _, err := m.leaf.Verify(x509.VerifyOptions{Roots: m.pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			return fmt.Errorf("the cluster CA does not verify this certificate: %w", err)
		}
	}
	if self < 0 {
		return nil
	}
	id, err := NodeID(m.leaf)
	if err != nil {
		return err
	}
	if id != self {
		return fmt.Errorf("the certificate names node %d, not this node (%d)", id, self)
	}
	return nil
}

func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return out, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
}

// Reload reads the files again. On any error the material in use stays
// (a half-written renewal must not take a node off the cluster) and the
// error is returned; reloaded says whether anything changed.
func (s *Source) Reload() (reloaded bool, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	m, err := s.read()
	if err != nil {
		return false, err
	}
	old := s.cur.Load()
	if bytes.Equal(old.stamp[:], m.stamp[:]) {
		return false, nil
	}
	s.cur.Store(m)
	s.logger.Info("nodetls: certificates reloaded", "cert", s.files.Cert, "subject", m.leaf.Subject.String(),
		"not_after", m.leaf.NotAfter.UTC().Format(time.RFC3339))
	return true, nil
}

// Watch calls Reload every interval until stop is closed, so a renewed
// certificate is picked up without a signal; failures are logged, once
// per distinct error.
func (s *Source) Watch(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if _, err := s.Reload(); err != nil {
			if err.Error() != lastErr {
				s.logger.Warn("nodetls: certificates not reloaded; the ones in use stay", "err", err)
			}
			lastErr = err.Error()
		} else {
			lastErr = ""
		}
	}
}

// NotAfter is when this node's certificate expires.
func (s *Source) NotAfter() time.Time { return s.cur.Load().leaf.NotAfter }

// CANotAfter is when the first certificate of the CA bundle expires.
func (s *Source) CANotAfter() time.Time {
	cas := s.cur.Load().cas
	first := cas[0].NotAfter
	for _, c := range cas[1:] {
		if c.NotAfter.Before(first) {
			first = c.NotAfter
		}
	}
	return first
}

// Files returns the files this source reads.
func (s *Source) Files() Files { return s.files }
