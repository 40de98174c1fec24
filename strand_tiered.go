package strand

import (
	"context"
	"log/slog"
	"time"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/tiered"
)

// TieredStorageConfig turns on tiered storage (Kafka's KIP-405): the
// sealed segments of topics with remote.storage.enable=true are uploaded to
// an S3-compatible bucket, local disk keeps only local.retention.ms and
// local.retention.bytes of them, and reads below the local log start are
// served from the bucket. See docs/TIERED.md.
type TieredStorageConfig struct {
	// Endpoint is the store's URL: http://host:port or https://host:port.
	Endpoint string
	// Bucket must exist.
	Bucket string
	// Region is the bucket's region; default us-east-1.
	Region string
	// Prefix is prepended to every object key, so several clusters can
	// share a bucket (e.g. "strand/prod/").
	Prefix string
	// AccessKey and SecretKey are the credentials (SigV4); both empty
	// means anonymous requests.
	AccessKey, SecretKey string
	// CAFile is a PEM file of the CAs trusted for an https endpoint
	// (default: the system's).
	CAFile string
	// UploadInterval is how often sealed segments are uploaded and
	// remote retention runs; default 10s.
	UploadInterval time.Duration
	// UploadConcurrency bounds the segment uploads running at once;
	// default 4.
	UploadConcurrency int
	// UploadBytesPerSecond bounds the upload bandwidth; zero: unbounded.
	UploadBytesPerSecond int64
	// CacheBytes bounds the memory holding chunks of remote segments for
	// reads; default 64 MiB.
	CacheBytes int64
	// OrphanGrace is how old an object no manifest names must be before it
	// is deleted as an orphan; default 1h.
	OrphanGrace time.Duration
	// UploadLagAlert is when /healthz says "degraded": a partition this
	// node leads has had a sealed segment waiting for upload, or every
	// request to the store has failed, for longer; default 5m.
	UploadLagAlert time.Duration
}

// brokerConfig builds the broker's tier; a nil config means no tier.
func (c *TieredStorageConfig) brokerConfig(ctx context.Context, logger *slog.Logger) (broker.TieredConfig, error) {
	if c == nil {
		return broker.TieredConfig{}, nil
	}
	region := c.Region
	if region == "" {
		region = "us-east-1"
	}
	s3, err := tiered.NewS3(tiered.S3Config{Endpoint: c.Endpoint, Bucket: c.Bucket, Region: region,
		AccessKey: c.AccessKey, SecretKey: c.SecretKey, CAFile: c.CAFile, Logger: logger})
	if err != nil {
		return broker.TieredConfig{}, err
	}
	// An unreachable store must not keep the broker down: uploads wait
	// and retry, and local segments stay until they are uploaded.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s3.Check(cctx); err != nil {
		logger.Warn("strand: tiered storage: the object store does not answer yet; uploads will retry", "err", err)
	}
	t, err := tiered.New(tiered.Config{Store: s3, Prefix: c.Prefix, Concurrency: c.UploadConcurrency,
		CacheBytes: c.CacheBytes, OrphanGrace: c.OrphanGrace, UploadLagAlert: c.UploadLagAlert, UploadBytesPerSecond: c.UploadBytesPerSecond, Logger: logger})
	if err != nil {
		return broker.TieredConfig{}, err
	}
	return broker.TieredConfig{Tier: t, Interval: c.UploadInterval}, nil
}
