package dlq

import (
	"log/slog"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/partition"
)

type (
	// Partition and NodeID are package partition's.
	Partition = partition.Partition
	NodeID    = partition.NodeID
)

// Node is what quarantining needs of the node.
type Node interface {
	// DLQPartition returns the partition of topic dlq that src's invalid
	// records go to, creating the topic if it does not exist. It runs
	// before src's lock is taken (creating a topic takes the node's
	// locks).
	DLQPartition(src *Partition, dlq string) (*Partition, error)
	// TopicExists reports whether topic name exists.
	TopicExists(name string) bool
	// Schemas is the registry schema validators bind to.
	Schemas() ingest.SchemaSource
	// Clustered and Fenced: on a cluster member that is not fenced, a DLQ
	// partition led by another node is written through ProduceRemote.
	Clustered() bool
	Fenced() bool
	ProduceRemote(leader NodeID, p *Partition, batch []byte) error
	Logger() *slog.Logger
}
