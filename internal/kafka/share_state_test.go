package kafka

import (
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// TestShareStateRPCsNotServedOnClientListener: the share-coordinator RPCs
// (83–87) are between nodes: a client listener neither advertises them nor
// answers them, even to a superuser — it closes the connection, as for
// Envelope — so no client can read or overwrite a share group's state.
func TestShareStateRPCsNotServedOnClientListener(t *testing.T) {
	t.Parallel()
	ts := secureServer(t, broker.Config{}, nil)
	reqs := []kmsg.Request{
		&kmsg.InitializeShareGroupStateRequest{GroupID: "g"},
		&kmsg.ReadShareGroupStateRequest{GroupID: "g"},
		&kmsg.WriteShareGroupStateRequest{GroupID: "g"},
		&kmsg.DeleteShareGroupStateRequest{GroupID: "g"},
		&kmsg.ReadShareGroupStateSummaryRequest{GroupID: "g"},
	}
	for _, req := range reqs {
		if ts.s.serves(req.Key()) {
			t.Errorf("%s advertised on a client listener", kmsg.NameForKey(req.Key()))
		}
		c := dial(t, ts.addr)
		plainLogin(t, c, "admin", "adminpw")
		c.send(req, 0)
		_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if got, _ := io.ReadAll(c.conn); len(got) != 0 {
			t.Errorf("%s from admin on a client listener was answered (%d bytes); want the connection closed", kmsg.NameForKey(req.Key()), len(got))
		}
	}
}
