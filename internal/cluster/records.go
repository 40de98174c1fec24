package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/strandmq/strand/internal/acl"
)

// ErrConflict: a record does not fit the image (a topic name taken by
// another id, a topic to remove that is not there).
var ErrConflict = errors.New("cluster: record conflicts with the metadata")

// Record is one change to the metadata.
type Record interface {
	apply(im *Image, index int64) error
}

// PutTopic creates a topic, or replaces one with the same id (a partition
// count that grew, changed configs). Prev, if set, is the topic the change
// was computed from: the record applies only if the topic is still that
// (a compare-and-set, so a change decided on a node whose image lagged
// cannot undo one committed meanwhile).
type PutTopic struct {
	Topic Topic
	Prev  *Topic `json:",omitempty"`
}

func (r PutTopic) apply(im *Image, _ int64) error {
	t := r.Topic
	if p := r.Prev; p != nil {
		cur, ok := im.topics[p.Name]
		if !ok || cur.ID != p.ID || cur.Partitions != p.Partitions || !maps.Equal(cur.Configs, p.Configs) {
			return fmt.Errorf("%w: topic %q changed since this change was computed; retry it", ErrConflict, p.Name)
		}
	}
	switch old, ok := im.topics[t.Name]; {
	case t.Name == "" || t.ID.IsZero() || t.Partitions < 1:
		return fmt.Errorf("%w: topic %q with id %s and %d partitions", ErrConflict, t.Name, t.ID, t.Partitions)
	case ok && old.ID != t.ID:
		return fmt.Errorf("%w: topic %q exists with another id", ErrConflict, t.Name)
	case ok && t.Partitions < old.Partitions:
		return fmt.Errorf("%w: topic %q cannot shrink from %d to %d partitions", ErrConflict, t.Name, old.Partitions, t.Partitions)
	case !ok && im.deleted[t.ID]:
		return fmt.Errorf("%w: topic id %s belonged to a deleted topic", ErrConflict, t.ID)
	}
	if other, taken := im.TopicByID(t.ID); taken && other.Name != t.Name {
		// Ids name topics uniquely: a second name on one id would make
		// every lookup by id depend on map order, and nodes diverge.
		return fmt.Errorf("%w: topic id %s is topic %q's", ErrConflict, t.ID, other.Name)
	}
	t.Configs = maps.Clone(t.Configs)
	im.topics[t.Name] = t
	im.names[t.ID] = t.Name
	return nil
}

// RemoveTopic deletes a topic and leaves a tombstone for its id, so its
// partition directories — and only they — may be removed, now or after a
// crash.
type RemoveTopic struct{ Name string }

func (r RemoveTopic) apply(im *Image, _ int64) error {
	t, ok := im.topics[r.Name]
	if !ok {
		return fmt.Errorf("%w: no topic %q to remove", ErrConflict, r.Name)
	}
	delete(im.topics, r.Name)
	delete(im.names, t.ID)
	delete(im.partitions, t.ID)
	im.deleted[t.ID] = true
	return nil
}

// ForgetDeleted drops tombstones whose directories are all gone.
type ForgetDeleted struct{ IDs []TopicID }

func (r ForgetDeleted) apply(im *Image, _ int64) error {
	for _, id := range r.IDs {
		delete(im.deleted, id)
	}
	return nil
}

// ProducerIDBlock reserves producer ids [First, First+Count) for a broker
// (Kafka's ProducerIdsRecord): ids are unique across the cluster because
// blocks never overlap. First must be at or above the next free id (a
// compare-and-set: two brokers proposing from one view cannot both win).
type ProducerIDBlock struct {
	Broker NodeID
	First  int64
	Count  int64
}

func (r ProducerIDBlock) apply(im *Image, _ int64) error {
	if r.Count <= 0 || r.First < im.nextProducerID {
		return fmt.Errorf("%w: producer ids from %d (%d of them); the next free id is %d", ErrConflict, r.First, r.Count, im.nextProducerID)
	}
	im.nextProducerID = r.First + r.Count
	return nil
}

// NextProducerID is the first producer id no block has reserved.
func (im *Image) NextProducerID() int64 { return im.nextProducerID }

// PutACLs replaces the cluster's ACL set with ACLs (acl.Set's encoding,
// which it must decode: a set no node could load never commits). Prev is
// the ACL version the change was computed from (a compare-and-set: two
// CreateAcls on different nodes cannot lose one another's ACLs; the loser
// recomputes and retries).
type PutACLs struct {
	ACLs []byte
	Prev int64
}

func (r PutACLs) apply(im *Image, _ int64) error {
	if r.Prev != im.aclVersion {
		return fmt.Errorf("%w: the ACLs changed since this change was computed (version %d, now %d); retry it", ErrConflict, r.Prev, im.aclVersion)
	}
	if _, err := acl.Decode(r.ACLs); err != nil {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	im.acls = slices.Clone(r.ACLs)
	im.aclVersion++
	return nil
}

// ACLs returns the ACL set in acl.Set's encoding (nil: none was ever set)
// and its version (the number of PutACLs applied).
func (im *Image) ACLs() ([]byte, int64) { return im.acls, im.aclVersion }

// ScramCredential is what RFC 5802 lets a server keep instead of a
// password: never the password, never the salted password.
type ScramCredential struct {
	Salt                 []byte
	Iterations           int
	StoredKey, ServerKey []byte
}

// PutScramCredential creates or replaces user's credential for mechanism
// ("SCRAM-SHA-256", "SCRAM-SHA-512"): AlterUserScramCredentials' upsertion.
type PutScramCredential struct {
	User       string
	Mechanism  string
	Credential ScramCredential
}

func (r PutScramCredential) apply(im *Image, _ int64) error {
	c := r.Credential
	if r.User == "" || r.Mechanism == "" || len(c.Salt) == 0 || c.Iterations <= 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 {
		return fmt.Errorf("%w: incomplete SCRAM credential for user %q", ErrConflict, r.User)
	}
	im.cloneScram(r.User)[r.Mechanism] = ScramCredential{Salt: slices.Clone(c.Salt), Iterations: c.Iterations,
		StoredKey: slices.Clone(c.StoredKey), ServerKey: slices.Clone(c.ServerKey)}
	return nil
}

// DeleteScramCredential removes user's credential for mechanism.
type DeleteScramCredential struct {
	User      string
	Mechanism string
}

func (r DeleteScramCredential) apply(im *Image, _ int64) error {
	if _, ok := im.scram[r.User][r.Mechanism]; !ok {
		return fmt.Errorf("%w: user %q has no %s credential", ErrConflict, r.User, r.Mechanism)
	}
	creds := im.cloneScram(r.User)
	delete(creds, r.Mechanism)
	if len(creds) == 0 {
		delete(im.scram, r.User)
	}
	return nil
}

// cloneScram gives im its own copy of the user map and of user's entry
// (images share maps until one changes), and returns the entry.
func (im *Image) cloneScram(user string) map[string]ScramCredential {
	if !im.scramOwned {
		im.scram, im.scramOwned = maps.Clone(im.scram), true
		if im.scram == nil {
			im.scram = map[string]map[string]ScramCredential{}
		}
	}
	creds := maps.Clone(im.scram[user])
	if creds == nil {
		creds = map[string]ScramCredential{}
	}
	im.scram[user] = creds
	return creds
}

// ScramCredential returns user's credential for mechanism.
func (im *Image) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	c, ok := im.scram[user][mechanism]
	return c, ok
}

// ScramUsers returns every user with a SCRAM credential and, for each, the
// mechanisms they have one for, sorted.
func (im *Image) ScramUsers() map[string][]string {
	out := make(map[string][]string, len(im.scram))
	for u, creds := range im.scram {
		out[u] = slices.Sorted(maps.Keys(creds))
	}
	return out
}

// QuotaEntity names whom a client quota applies to, as Kafka's quota
// entities: a user, a client id, or both; "" leaves a part out and
// QuotaDefault names the default of its kind (<default> in kafka-configs).
type QuotaEntity struct {
	User     string `json:",omitempty"`
	ClientID string `json:",omitempty"`
}

// QuotaDefault is the name of a default entity part.
const QuotaDefault = "<default>"

// key is the entity's map key (JSON map keys must be strings).
func (e QuotaEntity) key() string { return e.User + "\x1f" + e.ClientID }

func entityOf(key string) QuotaEntity {
	u, c, _ := strings.Cut(key, "\x1f")
	return QuotaEntity{User: u, ClientID: c}
}

// AlterClientQuota sets and removes quota values (producer_byte_rate,
// consumer_byte_rate, request_percentage, …) of one entity.
type AlterClientQuota struct {
	Entity QuotaEntity
	Set    map[string]float64 `json:",omitempty"`
	Remove []string           `json:",omitempty"`
}

func (r AlterClientQuota) apply(im *Image, _ int64) error {
	if r.Entity.User == "" && r.Entity.ClientID == "" {
		return fmt.Errorf("%w: a quota entity names a user or a client id", ErrConflict)
	}
	if !im.quotasOwned {
		im.quotas, im.quotasOwned = maps.Clone(im.quotas), true
		if im.quotas == nil {
			im.quotas = map[string]map[string]float64{}
		}
	}
	k := r.Entity.key()
	vals := maps.Clone(im.quotas[k])
	if vals == nil {
		vals = map[string]float64{}
	}
	for _, name := range r.Remove {
		delete(vals, name)
	}
	maps.Copy(vals, r.Set)
	if len(vals) == 0 {
		delete(im.quotas, k)
	} else {
		im.quotas[k] = vals
	}
	return nil
}

// ClientQuotas returns every entity's quota values.
func (im *Image) ClientQuotas() map[QuotaEntity]map[string]float64 {
	out := make(map[QuotaEntity]map[string]float64, len(im.quotas))
	for k, v := range im.quotas {
		out[entityOf(k)] = v
	}
	return out
}

// ClientQuota returns one entity's quota values (nil: none).
func (im *Image) ClientQuota(e QuotaEntity) map[string]float64 { return im.quotas[e.key()] }
