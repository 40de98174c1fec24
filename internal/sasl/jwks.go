package sasl

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// A JWKS (RFC 7517) names the public keys that may sign tokens. Only
// signature keys Strand can verify with are kept: RSA (at least 2048 bits,
// as RFC 7518 requires) and EC on P-256, P-384 and P-521. A symmetric
// ("oct") key is never kept: a JWKS is public, so a token "signed" with
// one of its keys by HMAC would prove nothing (the algorithm-confusion
// attack).

// maxJWKSBytes bounds what is read from a JWKS endpoint or file.
const maxJWKSBytes = 1 << 20

// unknownKidRefetch is how often, at most, a token naming a key the JWKS
// does not hold makes the key source fetch the JWKS again before its
// refresh is due: soon enough that a key rotated in at the identity
// provider is honoured at once, rarely enough that tokens with made-up
// key ids cannot turn the broker into a flood of requests to it.
const unknownKidRefetch = 10 * time.Second

// jwksFetchTimeout bounds one fetch of a JWKS URL.
const jwksFetchTimeout = 10 * time.Second

// jwk is one usable verification key.
type jwk struct {
	kid string
	alg string // the key's "alg", if it names one: only that algorithm may use it
	key any    // *rsa.PublicKey or *ecdsa.PublicKey
}

// keySet is a parsed JWKS.
type keySet []jwk

type rawJWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS reads a JWKS document. Keys of other types or for other uses
// are skipped, as a JWKS may well list them; a malformed key of a usable
// type is an error, and so is a set with no usable key.
func parseJWKS(data []byte) (keySet, error) {
	var doc struct {
		Keys []rawJWK `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("sasl: JWKS: %w", err)
	}
	var set keySet
	for i, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var key any
		var err error
		switch k.Kty {
		case "RSA":
			key, err = rsaKey(k)
		case "EC":
			key, err = ecKey(k)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sasl: JWKS key %d (kid %q): %w", i, k.Kid, err)
		}
		set = append(set, jwk{kid: k.Kid, alg: k.Alg, key: key})
	}
	if len(set) == 0 {
		return nil, errors.New("sasl: JWKS: no RSA or EC signature key")
	}
	return set, nil
}

func b64Int(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("bad base64url integer %q", s)
	}
	return new(big.Int).SetBytes(b), nil
}

func rsaKey(k rawJWK) (*rsa.PublicKey, error) {
	n, err := b64Int(k.N)
	if err != nil {
		return nil, fmt.Errorf("n: %w", err)
	}
	e, err := b64Int(k.E)
	if err != nil {
		return nil, fmt.Errorf("e: %w", err)
	}
	if n.BitLen() < 2048 {
		return nil, fmt.Errorf("RSA key of %d bits; at least 2048 are required", n.BitLen())
	}
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
		return nil, errors.New("bad RSA public exponent")
	}
	return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
}

var curves = map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}

func ecKey(k rawJWK) (*ecdsa.PublicKey, error) {
	c, ok := curves[k.Crv]
	if !ok {
		return nil, fmt.Errorf("unsupported curve %q", k.Crv)
	}
	x, err := b64Int(k.X)
	if err != nil {
		return nil, fmt.Errorf("x: %w", err)
	}
	y, err := b64Int(k.Y)
	if err != nil {
		return nil, fmt.Errorf("y: %w", err)
	}
	// The uncompressed point encoding lets crypto/ecdh check the point is
	// on the curve; an off-curve key is refused here, not at each use.
	size := (c.Params().BitSize + 7) / 8
	if len(x.Bytes()) > size || len(y.Bytes()) > size {
		return nil, errors.New("EC coordinates too long for the curve")
	}
	point := make([]byte, 1+2*size)
	point[0] = 4
	x.FillBytes(point[1 : 1+size])
	y.FillBytes(point[1+size:])
	pub, err := ecdsa.ParseUncompressedPublicKey(c, point)
	if err != nil {
		return nil, fmt.Errorf("EC point: %w", err)
	}
	return pub, nil
}

// find returns the keys that may verify a token with this kid and alg.
// Without a kid, any key fit for alg will do.
func (s keySet) find(kid, alg string) []any {
	var out []any
	for _, k := range s {
		if kid != "" && k.kid != kid {
			continue
		}
		if k.alg != "" && k.alg != alg {
			continue
		}
		if keyFits(k.key, alg) {
			out = append(out, k.key)
		}
	}
	return out
}

// KeySource finds the public keys that verify a token. Close stops its
// background work, if any.
type KeySource interface {
	// keys returns the keys fit for a token's kid and alg; none is not an
	// error, and the source may look again (fetch, re-read) before
	// answering that.
	keys(kid, alg string) ([]any, error)
	Close()
}

// FileKeys is a JWKS in a file (Kafka's sasl.oauthbearer.jwks.endpoint.url
// of file: form). The file is read again whenever its size or modification
// time changes, and when a token names a key it does not hold, so keys
// rotated into the file are honoured without a restart.
type FileKeys struct {
	path   string
	logger *slog.Logger

	mu struct {
		sync.Mutex
		set     keySet
		size    int64
		modTime time.Time
		read    time.Time // when the file was last read
	}
}

// NewFileKeys reads the JWKS at path; it must hold a usable key.
func NewFileKeys(path string, logger *slog.Logger) (*FileKeys, error) {
	if logger == nil {
		logger = slog.Default()
	}
	f := &FileKeys{path: path, logger: logger}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *FileKeys) loadLocked() error {
	fi, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("sasl: JWKS file: %w", err)
	}
	data, err := readLimited(f.path)
	if err != nil {
		return err
	}
	set, err := parseJWKS(data)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, f.path)
	}
	f.mu.set, f.mu.size, f.mu.modTime, f.mu.read = set, fi.Size(), fi.ModTime(), time.Now()
	return nil
}

func readLimited(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sasl: JWKS file: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("sasl: JWKS file: %w", err)
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("sasl: JWKS file %s is over %d bytes", path, maxJWKSBytes)
	}
	return data, nil
}

func (f *FileKeys) keys(kid, alg string) ([]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	changed := err == nil && (fi.Size() != f.mu.size || !fi.ModTime().Equal(f.mu.modTime))
	if changed {
		f.reloadLocked()
	}
	found := f.mu.set.find(kid, alg)
	// A rewrite to the same size within the file system's timestamp
	// granularity (coarse clock ticks, milliseconds apart) shows no
	// change to Stat. For a kid we do not hold, read once more if the
	// last read came soon enough after the last write that such a
	// rewrite could hide, or at most once a second otherwise.
	unsure := f.mu.read.Before(f.mu.modTime.Add(time.Second))
	if len(found) == 0 && !changed && (unsure || time.Since(f.mu.read) >= time.Second) {
		f.reloadLocked()
		found = f.mu.set.find(kid, alg)
	}
	return found, nil
}

// reloadLocked re-reads the file; a broken rewrite keeps the keys it had,
// so a half-written file does not lock every client out.
func (f *FileKeys) reloadLocked() {
	if err := f.loadLocked(); err != nil {
		f.mu.read = time.Now()
		f.logger.Warn("sasl: JWKS file unreadable; keeping the keys read before", "path", f.path, "err", err)
		return
	}
	f.logger.Info("sasl: JWKS file read", "path", f.path, "keys", len(f.mu.set))
}

// Close does nothing: a file source has no background work.
func (f *FileKeys) Close() {}

// URLKeys is a JWKS served over HTTP(S) by an identity provider (Kafka's
// RefreshingHttpsJwksVerificationKeyResolver): fetched at start, again
// every refresh interval, and again — at most once per 10 s — when a token
// names a key it does not hold. A failed fetch keeps the keys it had.
type URLKeys struct {
	url     string
	client  *http.Client
	refresh time.Duration
	logger  *slog.Logger

	set    atomic.Pointer[keySet]
	fetch  sync.Mutex // one fetch at a time
	forced time.Time  // last fetch for an unknown kid; under fetch
	now    func() time.Time
	cancel context.CancelFunc
	done   chan struct{}
}

// NewURLKeys fetches the JWKS at url (it must answer with a usable key)
// and refreshes it every refresh interval until Close. client nil: a
// client with the 10 s fetch timeout.
func NewURLKeys(ctx context.Context, url string, refresh time.Duration, client *http.Client, logger *slog.Logger) (*URLKeys, error) {
	if refresh <= 0 {
		return nil, errors.New("sasl: JWKS refresh interval must be positive")
	}
	if client == nil {
		client = &http.Client{Timeout: jwksFetchTimeout}
	}
	if logger == nil {
		logger = slog.Default()
	}
	u := &URLKeys{url: url, client: client, refresh: refresh, logger: logger, now: time.Now, done: make(chan struct{})}
	u.fetch.Lock()
	err := u.fetchLocked(ctx)
	u.fetch.Unlock()
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	u.cancel = cancel
	go u.refreshLoop(bg)
	return u, nil
}

func (u *URLKeys) refreshLoop(ctx context.Context) {
	defer close(u.done)
	t := time.NewTicker(u.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		u.fetch.Lock()
		if err := u.fetchLocked(ctx); err != nil && ctx.Err() == nil {
			u.logger.Warn("sasl: JWKS refresh failed; keeping the keys fetched before", "url", u.url, "err", err)
		}
		u.fetch.Unlock()
	}
}

// fetchLocked fetches and parses the JWKS, replacing the keys on success.
func (u *URLKeys) fetchLocked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.url, nil)
	if err != nil {
		return fmt.Errorf("sasl: JWKS URL: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return fmt.Errorf("sasl: JWKS fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sasl: JWKS fetch %s: HTTP %s", u.url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("sasl: JWKS fetch: %w", err)
	}
	if len(data) > maxJWKSBytes {
		return fmt.Errorf("sasl: JWKS at %s is over %d bytes", u.url, maxJWKSBytes)
	}
	set, err := parseJWKS(data)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, u.url)
	}
	u.set.Store(&set)
	return nil
}

func (u *URLKeys) keys(kid, alg string) ([]any, error) {
	if found := u.set.Load().find(kid, alg); len(found) > 0 {
		return found, nil
	}
	u.fetch.Lock()
	defer u.fetch.Unlock()
	// Another token may have fetched while this one waited.
	if found := u.set.Load().find(kid, alg); len(found) > 0 {
		return found, nil
	}
	now := u.now()
	if !u.forced.IsZero() && now.Sub(u.forced) < unknownKidRefetch {
		return nil, nil
	}
	u.forced = now
	if err := u.fetchLocked(context.Background()); err != nil {
		u.logger.Warn("sasl: JWKS fetch for an unknown key failed", "url", u.url, "kid", kid, "err", err)
		return nil, nil
	}
	u.logger.Info("sasl: JWKS fetched again for an unknown key", "url", u.url, "kid", kid)
	return u.set.Load().find(kid, alg), nil
}

// Close stops the refresh.
func (u *URLKeys) Close() {
	if u.cancel != nil {
		u.cancel()
		<-u.done
	}
}
