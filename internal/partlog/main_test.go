package partlog

import (
	"log/slog"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Recovery and retention log at Info; keep test output readable.
	if os.Getenv("PARTLOG_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.DiscardHandler))
	}
	goleak.VerifyTestMain(m)
}
