package quorum

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/cluster"
)

// A controller RPC carrying a field this build does not know — a newer
// node's, sent too early — is refused with a reason, not half-applied.
func TestControllerRefusesUnknownRequestFields(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	handled := 0
	m := newMuxListener(ln, nil, func(cluster.NodeID, rpcRequest) rpcResponse { handled++; return rpcResponse{} }, nil, &connSet{conns: map[net.Conn]struct{}{}})
	defer m.Close()
	send := func(body string) rpcResponse {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		frame := binary.BigEndian.AppendUint32([]byte{rpcMagic}, uint32(len(body)))
		if _, err := c.Write(append(frame, body...)); err != nil {
			t.Fatal(err)
		}
		var resp rpcResponse
		if err := readFrame(c, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := send(`{"readIndex":true}`); resp.Code != "" || handled != 1 {
		t.Fatalf("a known request: %+v (handled %d)", resp, handled)
	}
	resp := send(`{"register":{"ID":4,"IncarnationID":"x","FromTheFuture":true}}`)
	if resp.Code != "unsupported_request" || !strings.Contains(resp.Err, "FromTheFuture") || handled != 1 {
		t.Fatalf("a registration with an unknown field: %+v (handled %d), want it refused unhandled", resp, handled)
	}
}

// Roles are metadata.version 2: a cluster still at 1 (older nodes may be
// running) refuses a registration with roles and a broker-only join, and
// the join never travels as a voter change an older controller would
// read without its non-voter flag.
func TestRolesWaitForTheirLevel(t *testing.T) {
	im := featureImage(t, 2, 2)
	if err := cluster.NeedsLevel(im, cluster.MetadataVersionRoles, "a broker-only node"); !errors.Is(err, cluster.ErrUnsupportedFeature) || !strings.Contains(err.Error(), "strand cluster features --latest") {
		t.Fatalf("roles at metadata.version 1: %v, want a refusal that says how to finalize", err)
	}
	im, err := im.With(cluster.FinalizeFeature{Name: cluster.MetadataVersion, Level: cluster.MetadataVersionRoles})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.NeedsLevel(im, cluster.MetadataVersionRoles, "a broker-only node"); err != nil {
		t.Fatalf("roles at metadata.version 2: %v", err)
	}
	b, _ := json.Marshal(rpcRequest{Voter: &VoterChange{ID: 4, Addr: "h:1", Nonvoter: true}})
	if strings.Contains(string(b), "onvoter") {
		t.Fatalf("a voter change carries the non-voter flag an older controller would drop: %s", b)
	}
}

// featureImage is an image of brokers whose builds support
// metadata.version up to maxLevels (internal/cluster's helper).
func featureImage(t *testing.T, maxLevels ...int16) *cluster.Image {
	t.Helper()
	im := cluster.NewImage("c")
	var recs []cluster.Record
	for i, m := range maxLevels {
		recs = append(recs, cluster.RegisterBroker{ID: cluster.NodeID(i + 1), IncarnationID: "inc", Features: map[string]cluster.FeatureRange{cluster.MetadataVersion: {Min: 1, Max: m}}})
	}
	im, err := im.With(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return im
}
