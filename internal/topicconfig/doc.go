// Package topicconfig is a topic's configuration as Kafka spells it: every
// config Strand knows (Kafka's names, defaults, types and checks, and
// Strand's own strand.* configs for validation at ingress and record
// retention), a topic's effective Config (its own settings over the
// node-wide defaults over Kafka's defaults, as DescribeConfigs reports
// them with their sources and synonyms), IncrementalAlterConfigs'
// operations, and the translation of a Config into what the partition log
// and the compaction cleaner take. It also holds Kafka's rules for topic
// names and the names of the node's internal topics.
//
// It stores nothing: the node (package broker) keeps each topic's
// settings in its metadata and installs a Config with every change.
package topicconfig
