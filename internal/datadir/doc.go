// Package datadir is the files a node keeps in its data directory beside
// its logs, and their formats: the directory's lock (.lock, held by the
// one process that owns it), meta.properties (the node and cluster the
// directory belongs to), each partition directory's partition.metadata
// (the topic id its data belongs to) and the clean-shutdown marker a
// cluster member leaves when its logs are flushed. Each is written
// durably (written, fsynced, its directory fsynced) and read back
// strictly; what the node does with them (refuse a directory, adopt or
// delete data, report an unclean shutdown) is package broker's.
package datadir
