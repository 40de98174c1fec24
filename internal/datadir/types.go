package datadir

import "github.com/strandmq/strand/internal/cluster"

// TopicID is a topic's UUID.
type TopicID = cluster.TopicID
