package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/strandmq/strand"
)

// tieredOptions are serve's object-store flags (Kafka's remote.log.* and
// the S3 plugin's settings, in one place).
type tieredOptions struct {
	endpoint    string
	bucket      string
	region      string
	prefix      string
	caFile      string
	credentials string
	interval    time.Duration
	concurrency int
	cacheBytes  int64
	uploadRate  int64
	orphanGrace time.Duration
	lagAlert    time.Duration
}

func (o *tieredOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.endpoint, "tier-endpoint", "", "turn on tiered storage: the S3-compatible object store's URL, http://host:port or https://host:port (topics then may set remote.storage.enable=true)")
	f.StringVar(&o.bucket, "tier-bucket", "", "with --tier-endpoint: the bucket (it must exist)")
	f.StringVar(&o.region, "tier-region", "us-east-1", "with --tier-endpoint: the bucket's region")
	f.StringVar(&o.prefix, "tier-prefix", "", `with --tier-endpoint: prefix of every object key, so clusters can share a bucket (e.g. "strand/prod/")`)
	f.StringVar(&o.caFile, "tier-ca-file", "", "with an https --tier-endpoint: PEM CA bundle to trust instead of the system's")
	f.StringVar(&o.credentials, "tier-credentials-file", "", "with --tier-endpoint: file of access_key_id = … and secret_access_key = … lines (default: the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables)")
	f.DurationVar(&o.interval, "tier-upload-interval", 10*time.Second, "with --tier-endpoint: how often sealed segments are uploaded and remote retention runs")
	f.IntVar(&o.concurrency, "tier-upload-concurrency", 4, "with --tier-endpoint: most segment uploads at once")
	f.Int64Var(&o.uploadRate, "tier-upload-bytes-per-second", 0, "with --tier-endpoint: most bytes a second uploaded over every partition (0: no limit)")
	f.DurationVar(&o.orphanGrace, "tier-orphan-grace", time.Hour, "with --tier-endpoint: how old an object no manifest names must be before the orphan pass deletes it (longer than any upload takes)")
	f.DurationVar(&o.lagAlert, "tier-upload-lag-alert", 5*time.Minute, `with --tier-endpoint: /healthz says "degraded" when a partition's oldest sealed segment has waited for upload, or every request to the store has failed, this long`)
	f.Int64Var(&o.cacheBytes, "tier-cache-bytes", 64<<20, "with --tier-endpoint: memory for chunks of remote segments being read")
}

// config turns the flags into strand's tiered-storage settings, nil when
// tiered storage is off.
func (o *tieredOptions) config() (*strand.TieredStorageConfig, error) {
	if o.endpoint == "" {
		if o.bucket != "" || o.prefix != "" || o.caFile != "" || o.credentials != "" {
			return nil, usageErr("--tier-bucket, --tier-prefix, --tier-ca-file and --tier-credentials-file need --tier-endpoint")
		}
		return nil, nil
	}
	if o.bucket == "" {
		return nil, usageErr("--tier-endpoint needs --tier-bucket")
	}
	if o.concurrency < 1 || o.cacheBytes < 1<<20 || o.interval <= 0 || o.orphanGrace <= 0 || o.lagAlert <= 0 {
		return nil, usageErr("--tier-upload-concurrency must be at least 1, --tier-cache-bytes at least 1 MiB, --tier-upload-interval, --tier-orphan-grace and --tier-upload-lag-alert positive")
	}
	cfg := &strand.TieredStorageConfig{Endpoint: o.endpoint, Bucket: o.bucket, Region: o.region, Prefix: o.prefix,
		CAFile: o.caFile, UploadInterval: o.interval, UploadConcurrency: o.concurrency, CacheBytes: o.cacheBytes, UploadBytesPerSecond: o.uploadRate,
		OrphanGrace: o.orphanGrace, UploadLagAlert: o.lagAlert,
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	if o.credentials != "" {
		var err error
		if cfg.AccessKey, cfg.SecretKey, err = readTierCredentials(o.credentials); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// readTierCredentials reads an access key pair from a key = value file
// (the keys as in ~/.aws/credentials; # comments and [sections] ignored).
func readTierCredentials(path string) (string, string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("--tier-credentials-file: %w", err)
	}
	var id, secret string
	for line := range strings.SplitSeq(string(raw), "\n") {
		k, v, ok := strings.Cut(line, "=")
		switch k = strings.TrimSpace(k); {
		case !ok || strings.HasPrefix(k, "#"):
		case k == "access_key_id" || k == "aws_access_key_id":
			id = strings.TrimSpace(v)
		case k == "secret_access_key" || k == "aws_secret_access_key":
			secret = strings.TrimSpace(v)
		}
	}
	if id == "" || secret == "" {
		return "", "", fmt.Errorf("--tier-credentials-file %s: want access_key_id = … and secret_access_key = … lines", path)
	}
	return id, secret, nil
}
