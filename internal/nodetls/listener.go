package nodetls

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ListenerTLS is a client-facing listener's certificate, key and optional
// client CA, read from files and read again by Reload: the Kafka and HTTP
// listeners renew their certificates the way nodes do, without a restart.
// Safe for concurrent use.
type ListenerTLS struct {
	cert, key, ca string
	clientAuth    tls.ClientAuthType
	logger        *slog.Logger

	mu    sync.Mutex // serializes Reload
	cur   atomic.Pointer[tls.Config]
	leaf  atomic.Pointer[x509.Certificate]
	stamp [sha256.Size]byte
}

// LoadListener reads a listener's files; ca may be empty (no client
// certificates asked for), clientAuth applies when it is not.
func LoadListener(cert, key, ca string, clientAuth tls.ClientAuthType, logger *slog.Logger) (*ListenerTLS, error) {
	if logger == nil {
		logger = slog.Default()
	}
	l := &ListenerTLS{cert: cert, key: key, ca: ca, clientAuth: clientAuth, logger: logger}
	if _, err := l.Reload(); err != nil {
		return nil, err
	}
	return l, nil
}

// Config is the tls.Config to serve with: every handshake takes the
// configuration current when it starts. Its ClientCAs and ClientAuth are
// the first reading's, for code that asks whether the listener verifies
// client certificates; handshakes use the current one's.
func (l *ListenerTLS) Config() *tls.Config {
	first := l.cur.Load()
	return &tls.Config{MinVersion: tls.VersionTLS12, ClientCAs: first.ClientCAs, ClientAuth: first.ClientAuth,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return l.cur.Load(), nil }}
}

// NotAfter is when the listener's certificate expires.
func (l *ListenerTLS) NotAfter() time.Time { return l.leaf.Load().NotAfter }

// Reload reads the files again; on error the configuration in use stays.
func (l *ListenerTLS) Reload() (changed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	raw, stamp, err := readFiles(l.cert, l.key, l.ca)
	if err != nil {
		return false, err
	}
	certPEM, keyPEM, caPEM := raw[0], raw[1], raw[2]
	if l.cur.Load() != nil && bytes.Equal(stamp[:], l.stamp[:]) {
		return false, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("nodetls: %s and %s: %w", l.cert, l.key, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if l.ca != "" {
		cas, err := parseCerts(caPEM)
		if err != nil || len(cas) == 0 {
			return false, fmt.Errorf("nodetls: %s holds no CA certificate (%v)", l.ca, err)
		}
		cfg.ClientCAs, cfg.ClientAuth = x509.NewCertPool(), l.clientAuth
		for _, c := range cas {
			cfg.ClientCAs.AddCert(c)
		}
	}
	reloaded := l.cur.Load() != nil
	l.cur.Store(cfg)
	l.leaf.Store(pair.Leaf)
	l.stamp = stamp
	if reloaded {
		l.logger.Info("nodetls: listener certificate reloaded", "cert", l.cert, "subject", pair.Leaf.Subject.String(),
			"not_after", pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return reloaded, nil
}
