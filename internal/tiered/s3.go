package tiered

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config says how to reach an S3-compatible bucket.
type S3Config struct {
	// Endpoint is the store's URL, http://host:port or https://host:port.
	Endpoint string
	Bucket   string
	Region   string
	// AccessKey and SecretKey are the credentials; both empty means
	// anonymous requests.
	AccessKey string
	SecretKey string
	// CAFile, if set, is a PEM file of the CAs to trust for https
	// endpoints (instead of the system's).
	CAFile string
	// Logger says what the store's client finds; nil means slog's default.
	Logger *slog.Logger
}

// responseTimeout bounds the wait for a store's answer to one request.
const responseTimeout = 2 * time.Minute

// S3 is a Store on an S3-compatible bucket, through minio-go.
type S3 struct {
	client    *minio.Client
	bucket    string
	transport *http.Transport
	// For PutFile, which sends its requests itself.
	http                 *http.Client
	endpoint             *url.URL
	region               string
	accessKey, secretKey string
	logger               *slog.Logger
}

// CloseIdle closes the client's idle connections.
func (s *S3) CloseIdle() { s.transport.CloseIdleConnections() }

// NewS3 returns a Store on cfg's bucket. It does not contact the store.
func NewS3(cfg S3Config) (*S3, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("tiered: endpoint %q: want http://host:port or https://host:port", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("tiered: no bucket")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A store that takes a request and never answers must fail it (then
	// it is retried, and /healthz counts the store as failing), not hold
	// the partition's uploads forever. Counted from the end of the
	// request body, so a large upload is not cut short.
	tr.ResponseHeaderTimeout = responseTimeout
	// Read-ahead and upload windows keep several requests in flight at
	// once; http's default of two idle connections per host would close
	// the others after each request and dial anew for the next.
	tr.MaxIdleConnsPerHost = 64
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tiered: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tiered: CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	// One try per call: the Tier retries every store operation itself
	// (Config.Attempts, Backoff) and counts the failure after its last
	// try. minio-go's own retries (10, with up to a second between them)
	// inside each of those made an outage take half a minute or more to
	// show as an upload error.
	opts := &minio.Options{Secure: u.Scheme == "https", Region: cfg.Region, Transport: tr,
		BucketLookup: minio.BucketLookupPath, MaxRetries: 1}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		opts.Creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	c, err := minio.New(u.Host, opts)
	if err != nil {
		return nil, fmt.Errorf("tiered: s3 client: %w", err)
	}
	return &S3{client: c, bucket: cfg.Bucket, transport: tr, http: &http.Client{Transport: tr},
		endpoint: &url.URL{Scheme: u.Scheme, Host: u.Host}, region: cfg.Region,
		accessKey: cfg.AccessKey, secretKey: cfg.SecretKey, logger: cmp.Or(cfg.Logger, slog.Default())}, nil
}

// Check verifies the bucket exists and the credentials reach it.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("tiered: bucket %s: %w", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("tiered: bucket %s does not exist", s.bucket)
	}
	return nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	_, err := s.client.PutObject(ctx, s.bucket, key, body, size,
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: size < 64<<20})
	if err != nil {
		return fmt.Errorf("tiered: put %s: %w", key, err)
	}
	return nil
}

// Get implements Store.
func (s *S3) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	var opts minio.GetObjectOptions
	switch {
	case n > 0:
		if err := opts.SetRange(off, off+n-1); err != nil {
			return nil, fmt.Errorf("tiered: get %s: %w", key, err)
		}
	case n == 0:
		return nil, nil
	case off > 0:
		if err := opts.SetRange(off, 0); err != nil {
			return nil, fmt.Errorf("tiered: get %s: %w", key, err)
		}
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, opts)
	if err != nil {
		return nil, s.getError(key, err)
	}
	defer obj.Close()
	if n < 0 {
		b, err := io.ReadAll(obj)
		if err != nil {
			return nil, s.getError(key, err)
		}
		return b, nil
	}
	// A range's size is known: read it into one buffer of that size, not
	// one grown (and copied) from 512 bytes.
	b := make([]byte, n)
	if got, err := io.ReadFull(obj, b); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return nil, fmt.Errorf("tiered: get %s: %d bytes at %d, want %d", key, got, off, n)
		}
		return nil, s.getError(key, err)
	}
	return b, nil
}

func (s *S3) getError(key string, err error) error {
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("tiered: get %s: %w", key, err)
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil
		}
		return fmt.Errorf("tiered: delete %s: %w", key, err)
	}
	return nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var keys []ObjectInfo
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("tiered: list %s: %w", prefix, o.Err)
		}
		keys = append(keys, ObjectInfo{Key: o.Key, Size: o.Size, Modified: o.LastModified})
	}
	slices.SortFunc(keys, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return keys, nil
}
