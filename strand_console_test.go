package strand

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// TestConsoleListener: Config.ConsoleAddr serves the console's JSON API on
// its own listener, reflecting what was produced through the embed API.
func TestConsoleListener(t *testing.T) {
	t.Parallel()
	b, err := Start(context.Background(), Config{Dir: t.TempDir(), Addr: "127.0.0.1:0", ConsoleAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic("seen", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Produce("seen", []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + b.ConsoleAddr() + "/api/v1/topics/seen")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		Name       string
		Partitions []struct {
			HighWatermark int64 `json:"high_watermark"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || d.Name != "seen" || len(d.Partitions) != 1 || d.Partitions[0].HighWatermark != 1 {
		t.Fatalf("console says %d %+v", resp.StatusCode, d)
	}
}
