package main

import (
	"fmt"

	"github.com/strandmq/strand"
)

// joinHint is what a node started with --join logs before it waits: the
// command that ends the wait. Without it the operator sees only the
// warnings of a node that cannot reach the controller yet, and no word
// about what it waits for.
func joinHint(voters []strand.Voter, id int32) string {
	addr := "<this node's --controller-quorum address>"
	for _, v := range voters {
		if v.ID == id {
			addr = v.Addr
		}
	}
	return fmt.Sprintf("strand: --join: this node serves nothing until a running node adds it to the metadata quorum: strand cluster add-voter --node-id %d --raft-addr %s --brokers <a running node>", id, addr)
}
