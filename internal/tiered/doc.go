// Package tiered owns Strand's object-storage tier (Kafka's KIP-405): the
// object-store client, the per-partition remote manifest, the uploader that
// copies sealed segments to the store, remote retention, and remote reads
// through a bounded chunk cache.
//
// # Layout in the bucket
//
//	<prefix>/<topic>-<topicID>/<partition>/
//	  segments/<base>-<id>.log        a sealed segment's batches, byte for byte
//	  segments/<base>-<id>.index      its offset index, as partlog writes it
//	  segments/<base>-<id>.timeindex  its time index
//	  segments/<base>-<id>.snapshot   the producer state at its end (follower.go)
//	  manifest/<epoch>-<seq>.json     the manifest: which segments are remote
//
// Offsets, epochs and sequence numbers are zero-padded so that the key order
// is the numeric order. id is random per upload, so an upload never
// overwrites an object: a retried or deposed upload leaves at worst an
// object no manifest names (an orphan), which CleanOrphans deletes.
//
// # The manifest and its fencing
//
// The newest manifest is the one with the greatest key: the highest leader
// epoch, then the highest sequence number. A manifest is written only after
// every object it names is complete, so whatever it names is readable. A
// leader claims its epoch (Claim) by writing the newest manifest again under
// its own epoch before it uploads anything. From then on a deposed leader,
// whose epoch is lower, can still write a manifest key, but that key sorts
// below the new leader's and is never read: a late upload cannot replace or
// shadow the new leader's history. Before each write a leader also lists the
// manifests and stops (ErrFenced) when a higher epoch has claimed the
// partition, so a deposed leader gives up at its next step.
//
// A replica that starts below its leader's local log start does not copy
// what the store holds: FollowerStart gives it the remote segment boundary
// to start at, the leader-epoch entries up to there and the producer
// snapshot uploaded with that segment (KIP-405's follower path).
//
// Health (tier.go) is /healthz's "uploads are behind": the store has
// failed every request after its retries, or a partition's oldest sealed
// segment has waited for upload (counted on the tier's clock from the pass
// that first found it waiting, not from record timestamps), for longer than
// Config.UploadLagAlert.
//
// # Remote reads
//
// A read copies batches out of fixed-size chunks of the segment's object
// (ranged GETs) held in an LRU cache (cache.go) that also knows the chunks
// in flight, so a chunk is never fetched twice at once. Every read starts
// the GETs of the window after its position (read-ahead, across segment
// ends, bounded per tier), so one read's chunks arrive together and a
// sequential reader's next ones are ready before it asks.
//
// A manifest adds a segment only when it starts exactly at the manifest's
// end offset, so a restart that finds a segment already recorded uploads the
// next one: no offset is ever recorded twice.
package tiered
