package storetest

import (
	"net/http"
	"os"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
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
	t.Fatal(http.ListenAndServe(addr, gofakes3.New(backend).Server()))
}
