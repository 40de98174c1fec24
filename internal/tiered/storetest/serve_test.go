package storetest

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestServeStandalone is not a test: with STRAND_STORETEST_SERVE=host:port
// it serves the same store (gofakes3 in memory, the bucket Bucket) on that
// address until killed, so a long run can reach a store in another
// process — in another network namespace, standing in for another machine
// (docs/TIERED.md, "Volume and performance"; STRAND_TIERED_ENDPOINT).
func TestServeStandalone(t *testing.T) {
	addr := os.Getenv("STRAND_STORETEST_SERVE")
	if addr == "" {
		t.Skip("set STRAND_STORETEST_SERVE=host:port to serve a store there")
	}
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatal(err)
	}
	t.Logf("serving bucket %s on http://%s", Bucket, addr)
	t.Fatal(http.ListenAndServe(addr, checksummed(gofakes3.New(backend).Server())))
}

// The proxy passes a signed request on as it was signed, also a held one
// released later; and against an external store (which checks SigV4) a
// request signed with the wrong secret is refused, so the signatures that
// pass are really checked.
func TestProxyForwardsSignedRequests(t *testing.T) {
	s := Start(t)
	c := client(t, s, s.SecretKey)
	ctx := context.Background()
	put := func(c *minio.Client, key, body string) error {
		_, err := c.PutObject(ctx, s.Bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
		return err
	}
	if err := put(c, "a/plain", "plain body"); err != nil {
		t.Fatal(err)
	}
	held := s.Hold(IsPut("/held"))
	errc := make(chan error, 1)
	go func() { errc <- put(c, "a/held", "held body") }()
	<-held.Arrived()
	held.Release()
	<-held.Done()
	if err := <-errc; err != nil || held.Status != http.StatusOK {
		t.Fatalf("held PUT: %v, store answered %d", err, held.Status)
	}
	if got := string(held.Payload()); got != "held body" {
		t.Fatalf("held payload %q", got)
	}
	for key, want := range map[string]string{"a/plain": "plain body", "a/held": "held body"} {
		o, err := c.GetObject(ctx, s.Bucket, key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(o)
		o.Close()
		if err != nil || string(b) != want {
			t.Fatalf("%s: %q, %v", key, b, err)
		}
	}
	if !s.External {
		return // gofakes3 checks no signatures
	}
	if err := put(client(t, s, s.SecretKey+"x"), "a/forged", "x"); err == nil {
		t.Fatal("the store took a request signed with the wrong secret")
	}
}

func client(t *testing.T, s *Server, secret string) *minio.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	c, err := minio.New(strings.TrimPrefix(s.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, secret, ""),
		Region: s.Region, BucketLookup: minio.BucketLookupPath, Transport: tr, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
