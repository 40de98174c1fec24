package quorum

import (
	"errors"
	"testing"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/nodetls"
)

// TestCheckSender: with inter-node TLS a controller RPC may register,
// heartbeat or change an ISR only for the node its certificate names;
// forwarded changes are any node's; the controller's own calls and a
// network without TLS (nodetls.AnyNode) are not checked.
func TestCheckSender(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer cluster.NodeID
		req  rpcRequest
		ok   bool
	}{
		{"own registration", 2, rpcRequest{Register: &cluster.Registration{ID: 2}}, true},
		{"another's registration", 2, rpcRequest{Register: &cluster.Registration{ID: 3}}, false},
		{"own heartbeat", 1, rpcRequest{Heartbeat: &cluster.Heartbeat{ID: 1}}, true},
		{"another's heartbeat", 1, rpcRequest{Heartbeat: &cluster.Heartbeat{ID: 2}}, false},
		{"own ISR change", 3, rpcRequest{AlterPartition: &cluster.AlterPartition{Broker: 3}}, true},
		{"another's ISR change", 3, rpcRequest{AlterPartition: &cluster.AlterPartition{Broker: 1}}, false},
		{"forwarded records", 2, rpcRequest{Apply: []byte("[]")}, true},
		{"without TLS", nodetls.AnyNode, rpcRequest{Register: &cluster.Registration{ID: 3}}, true},
	} {
		err := checkSender(tc.peer, tc.req)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, cluster.ErrNotTheSender)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
