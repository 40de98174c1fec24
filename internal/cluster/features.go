package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Feature levels (Kafka's metadata.version, KIP-584/KIP-778) let a cluster
// run nodes of two builds at once. Each build knows the levels it can
// read and write; each node registers that range; the operator finalizes
// a level once every registered node supports it (UpdateFeatures), and
// from then on nodes may write what that level adds. Until then a newer
// node writes only what the finalized level allows, so an older node
// never meets a record it would misread. A finalized level never goes
// down: records of the higher level may already be in the log.
//
// A level is a promise about the metadata log and the controller RPCs,
// not about the client protocol (clients negotiate that per request with
// ApiVersions).

// MetadataVersion is the feature that versions the metadata log and the
// inter-node protocol.
const MetadataVersion = "metadata.version"

// Levels of metadata.version.
const (
	// MetadataVersionFeatures is the first level: the metadata as it was
	// when feature levels arrived (every record type of codec.go at
	// record version 1, brokers registering their supported features).
	// A cluster that never finalized anything runs at it.
	MetadataVersionFeatures int16 = 1

	// MetadataVersionRoles adds process roles (roles.go): registrations
	// carrying Roles, and broker-only nodes joining the quorum as raft
	// non-voters (the Observer controller RPC).
	MetadataVersionRoles int16 = 2

	// MetadataVersionThrottles adds dynamic broker configs (the
	// broker_config record, throttle.go): the replication throttle rates
	// per broker and as the cluster default.
	MetadataVersionThrottles int16 = 3

	// MetadataVersionGroupConfigs adds group configs kept in the metadata
	// (AlterGroupConfig records, groupconfig.go): a cluster's share-group
	// configs, as Kafka keeps a GROUP resource's ConfigRecords.
	MetadataVersionGroupConfigs int16 = 4

	// MetadataVersionClusterID makes the raft port's cluster-id hello
	// mandatory (package quorum, hello.go): every connection must open
	// by naming its cluster, and one that does not — an older build's —
	// is refused. Below it a node still sends the hello, but accepts a
	// connection without one and, when a peer closes on its hello (an
	// older build does), dials that peer again without it: a rolling
	// upgrade mixes the two builds. No record changes.
	MetadataVersionClusterID int16 = 5

	// MetadataVersionLatest is the highest level this build writes.
	MetadataVersionLatest = MetadataVersionClusterID
)

// FeatureRange is the levels of one feature a node supports.
type FeatureRange struct {
	Min int16
	Max int16
}

// Contains reports whether level is in the range.
func (r FeatureRange) Contains(level int16) bool { return level >= r.Min && level <= r.Max }

// SupportedFeatures returns the feature levels this build supports.
func SupportedFeatures() map[string]FeatureRange {
	return map[string]FeatureRange{MetadataVersion: {Min: MetadataVersionFeatures, Max: MetadataVersionLatest}}
}

// defaultLevels are the levels of a cluster that never finalized a
// feature: the lowest each feature has.
var defaultLevels = map[string]int16{MetadataVersion: MetadataVersionFeatures}

// FeatureLevel returns the finalized level of feature name (its lowest
// level when none was finalized, 0 for a feature Strand does not know).
func (im *Image) FeatureLevel(name string) int16 {
	if l, ok := im.features[name]; ok {
		return l
	}
	return defaultLevels[name]
}

// FinalizedFeatures returns every feature's finalized level.
func (im *Image) FinalizedFeatures() map[string]int16 {
	out := maps.Clone(defaultLevels)
	maps.Copy(out, im.features)
	return out
}

// FinalizeFeature raises a feature's finalized level. It applies only if
// every registered broker supports the level and the level is not below
// the finalized one — decided on the image, so every node reaches the
// same verdict.
type FinalizeFeature struct {
	Name  string
	Level int16
}

func (r FinalizeFeature) apply(im *Image, _ int64) error {
	if err := CheckFinalize(im, r.Name, r.Level); err != nil {
		return err
	}
	// A node that replays the log with a build too old for the level
	// must stop here rather than read on (it would misread what comes).
	if have, ok := SupportedFeatures()[r.Name]; !ok || r.Level > have.Max {
		panic(fmt.Sprintf("cluster: the metadata log finalizes %s %d, and this build supports at most %d: run a newer build on this node", r.Name, r.Level, have.Max))
	}
	im.features = maps.Clone(im.features)
	if im.features == nil {
		im.features = map[string]int16{}
	}
	im.features[r.Name] = r.Level
	return nil
}

// CheckFinalize says why feature name cannot be finalized at level in im,
// or nil: Kafka's rules — a known feature, no downgrade, every registered
// broker supports the level.
func CheckFinalize(im *Image, name string, level int16) error {
	if _, ok := defaultLevels[name]; !ok {
		return fmt.Errorf("%w: unknown feature %q (known: %s)", ErrInvalidFeature, name, MetadataVersion)
	}
	if cur := im.FeatureLevel(name); level < cur {
		return fmt.Errorf("%w: %s is finalized at %d; a finalized level is never lowered (records of level %d may be in the log)", ErrFeatureDowngrade, name, cur, cur)
	}
	for _, id := range slices.Sorted(maps.Keys(im.brokers)) {
		r, ok := im.brokers[id].Features[name]
		if !ok {
			r = FeatureRange{Min: defaultLevels[name], Max: defaultLevels[name]}
		}
		if !r.Contains(level) {
			return fmt.Errorf("%w: node %d supports %s %d to %d, not %d: upgrade it first (or unregister it)", ErrInvalidFeature, id, name, r.Min, r.Max, level)
		}
	}
	return nil
}

// NeedsLevel refuses what, which the metadata.version level needs, while
// the cluster runs at a lower one: older nodes may still be running, and
// they would misread (or refuse to read) what it writes.
func NeedsLevel(im *Image, level int16, what string) error {
	if cur := im.FeatureLevel(MetadataVersion); cur < level {
		return fmt.Errorf("%w: %s needs %s %d and the cluster runs %d: once every node runs this build, finalize it (strand cluster features --latest)",
			ErrUnsupportedFeature, what, MetadataVersion, level, cur)
	}
	return nil
}

// checkSupported refuses finalized levels this build cannot run at (a
// snapshot or meta.json from a newer cluster).
func checkSupported(levels map[string]int16) error {
	have := SupportedFeatures()
	for name, level := range levels {
		if r, ok := have[name]; !ok || !r.Contains(level) {
			return fmt.Errorf("%w: the metadata finalizes %s %d and this build supports %d to %d: run a newer build", ErrUnsupportedFeature, name, level, r.Min, r.Max)
		}
	}
	return nil
}

// CheckRegistration refuses a node whose build cannot run at the
// cluster's finalized levels (Kafka's UNSUPPORTED_VERSION at broker
// registration).
func CheckRegistration(im *Image, r Registration) error {
	for name, level := range im.FinalizedFeatures() {
		fr, ok := r.Features[name]
		if !ok {
			fr = FeatureRange{Min: defaultLevels[name], Max: defaultLevels[name]}
		}
		if !fr.Contains(level) {
			return fmt.Errorf("%w: the cluster runs %s %d and node %d supports %d to %d: run a build that supports it", ErrUnsupportedFeature, name, level, r.ID, fr.Min, fr.Max)
		}
	}
	return nil
}

// Errors of feature finalization and registration.
var (
	ErrInvalidFeature     = errors.New("cluster: invalid feature update")
	ErrFeatureDowngrade   = errors.New("cluster: feature downgrade refused")
	ErrUnsupportedFeature = errors.New("cluster: this build does not support the cluster's finalized features")
)
