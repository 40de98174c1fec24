package broker

import (
	"github.com/strandmq/strand/internal/cluster"
)

// The data directory:
//
//	<dir>/meta.json                 cluster metadata: cluster id, topics, configs,
//	                                deleted topic ids (cluster.FileStore)
//	<dir>/producer-ids.json         producer id reservations (package producer)
//	<dir>/.lock                     held (flock) by the broker using the directory
//	<dir>/producer-state/<id>-<p>.json  producer snapshots (topic id in hex)
//	<dir>/<topic>-<partition>/      one partlog.Log per partition, with
//	                                partition.metadata naming its topic id
const metaFileName = cluster.MetaFileName

// producerStateDir holds producer snapshots written at clean close.
const producerStateDir = "producer-state"

// TopicID is a topic's 16-byte UUID (Metadata v10+, Fetch v13+).
type TopicID = cluster.TopicID

func newTopicID() TopicID { return cluster.NewTopicID() }

func parseTopicID(s string) (TopicID, error) { return cluster.ParseTopicID(s) }
