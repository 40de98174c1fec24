package broker

import (
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/cluster"
)

// ErrACLConflict: the ACLs changed between reading them and putting the
// change (another CreateAcls or DeleteAcls won); recompute and retry.
var ErrACLConflict = errors.New("broker: the ACLs changed concurrently")

// ACLs returns the cluster's ACL set, in acl.Set's encoding (nil: never
// set), and its version, from the metadata: meta.json on a single node,
// the raft-replicated image in a cluster.
func (b *Broker) ACLs() (data []byte, version int64) { return b.meta.Image().ACLs() }

// PutACLs makes data the ACL set if it is still at version prev, durably
// (meta.json written and synced, or committed by the quorum) before it
// returns.
func (b *Broker) PutACLs(data []byte, prev int64) error {
	if _, err := b.meta.Apply(cluster.PutACLs{ACLs: data, Prev: prev}); err != nil {
		if errors.Is(err, cluster.ErrConflict) {
			if _, now := b.ACLs(); now != prev {
				return fmt.Errorf("%w: %w", ErrACLConflict, err)
			}
		}
		return fmt.Errorf("broker: put ACLs: %w", err)
	}
	return nil
}

// WatchACLs calls fn with the ACL set and version of every metadata image
// applied from now on (a change made on any node of a cluster; most images
// change something else, so fn skips versions it has), until cancel.
func (b *Broker) WatchACLs(fn func(data []byte, version int64)) (cancel func()) {
	return b.meta.Subscribe(func(img *cluster.Image) { fn(img.ACLs()) })
}

// ScramCredential returns user's SCRAM credential for mechanism from the
// metadata.
func (b *Broker) ScramCredential(user, mechanism string) (cluster.ScramCredential, bool) {
	return b.meta.Image().ScramCredential(user, mechanism)
}

// ScramUsers returns every user with SCRAM credentials in the metadata,
// with their mechanisms.
func (b *Broker) ScramUsers() map[string][]string { return b.meta.Image().ScramUsers() }

// AlterScramCredentials applies credential changes atomically and durably
// (one metadata change: meta.json, or one raft entry).
func (b *Broker) AlterScramCredentials(puts []cluster.PutScramCredential, deletes []cluster.DeleteScramCredential) error {
	recs := make([]cluster.Record, 0, len(puts)+len(deletes))
	for _, d := range deletes {
		recs = append(recs, d)
	}
	for _, p := range puts {
		recs = append(recs, p)
	}
	if _, err := b.meta.Apply(recs...); err != nil {
		return fmt.Errorf("broker: alter SCRAM credentials: %w", err)
	}
	return nil
}

// WatchScramUsers calls fn with the SCRAM users of every metadata image
// applied from now on, until cancel.
func (b *Broker) WatchScramUsers(fn func(users map[string][]string)) (cancel func()) {
	return b.meta.Subscribe(func(img *cluster.Image) { fn(img.ScramUsers()) })
}

// ClientQuotas returns every quota entity's values from the metadata.
func (b *Broker) ClientQuotas() map[cluster.QuotaEntity]map[string]float64 {
	return b.meta.Image().ClientQuotas()
}

// AlterClientQuotas applies quota changes atomically and durably.
func (b *Broker) AlterClientQuotas(changes []cluster.AlterClientQuota) error {
	recs := make([]cluster.Record, len(changes))
	for i, c := range changes {
		recs[i] = c
	}
	if _, err := b.meta.Apply(recs...); err != nil {
		return fmt.Errorf("broker: alter client quotas: %w", err)
	}
	return nil
}

// WatchClientQuotas calls fn with the quotas of every metadata image
// applied from now on, until cancel.
func (b *Broker) WatchClientQuotas(fn func(map[cluster.QuotaEntity]map[string]float64)) (cancel func()) {
	return b.meta.Subscribe(func(img *cluster.Image) { fn(img.ClientQuotas()) })
}
