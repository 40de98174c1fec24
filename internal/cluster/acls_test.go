package cluster

import (
	"bytes"
	"errors"
	"testing"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/vfs"
)

func aclBytes(t *testing.T, bs ...acl.Binding) []byte {
	t.Helper()
	s, err := acl.NewSet(bs)
	if err != nil {
		t.Fatal(err)
	}
	return s.Encode(nil)
}

// TestPutACLs: the ACL set is a compare-and-set on its version (a change
// computed from an old version conflicts), bytes that do not decode as an
// ACL set never commit, and the set survives meta.json (reopen and power
// cut), a raft snapshot and the record codec.
func TestPutACLs(t *testing.T) {
	read := acl.Binding{Pattern: acl.Pattern{Type: acl.ResourceTopic, Name: "orders.", PatternType: acl.PatternPrefixed},
		Entry: acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.Allow}}
	write := read
	write.Entry.Operation = acl.OpWrite
	one, two := aclBytes(t, read), aclBytes(t, read, write)

	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	s, _, err := OpenFileStore(fs, "/d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ClusterInit{ClusterID: "c1"}, PutACLs{ACLs: one, Prev: 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(PutACLs{ACLs: two, Prev: 0}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a change from version 0 after version 1: %v, want a conflict", err)
	}
	if _, err := s.Apply(PutACLs{ACLs: []byte("SACL\x01\x05garbage"), Prev: 1}); !errors.Is(err, ErrConflict) {
		t.Fatalf("undecodable ACLs: %v, want a conflict", err)
	}
	if _, err := s.Apply(PutACLs{ACLs: two, Prev: 1}); err != nil {
		t.Fatal(err)
	}
	for name, disk := range map[string]vfs.FS{"reopen": fs, "power cut": fs.CrashClone(vfs.CrashOptions{})} {
		r, _, err := OpenFileStore(disk, "/d")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if data, v := r.Image().ACLs(); !bytes.Equal(data, two) || v != 2 {
			t.Fatalf("%s: ACLs %q version %d", name, data, v)
		}
	}
	snap, err := EncodeImage(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	im, err := DecodeImage(snap)
	if err != nil {
		t.Fatal(err)
	}
	if data, v := im.ACLs(); !bytes.Equal(data, two) || v != 2 {
		t.Fatalf("snapshot: ACLs %q version %d", data, v)
	}
	enc, err := EncodeRecords([]Record{PutACLs{ACLs: two, Prev: 7}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRecords(enc)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := recs[0].(PutACLs); !ok || !bytes.Equal(r.ACLs, two) || r.Prev != 7 {
		t.Fatalf("record round trip: %+v", recs[0])
	}
}

// TestScramCredentialRecords: credentials are put and deleted per user and
// mechanism, an image never changes under its readers, deleting a missing
// credential conflicts, and the credentials survive meta.json and a raft
// snapshot.
func TestScramCredentialRecords(t *testing.T) {
	cred := ScramCredential{Salt: []byte("0123456789abcdef"), Iterations: 4096, StoredKey: []byte("stored"), ServerKey: []byte("server")}
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	s, _, err := OpenFileStore(fs, "/d")
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Apply(ClusterInit{ClusterID: "c1"}, PutScramCredential{User: "carol", Mechanism: "SCRAM-SHA-256", Credential: cred})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Apply(PutScramCredential{User: "carol", Mechanism: "SCRAM-SHA-512", Credential: cred},
		PutScramCredential{User: "dave", Mechanism: "SCRAM-SHA-256", Credential: cred})
	if err != nil {
		t.Fatal(err)
	}
	if got := before.ScramUsers(); len(got) != 1 || len(got["carol"]) != 1 {
		t.Fatalf("an earlier image changed: %v", got)
	}
	if got := after.ScramUsers(); len(got) != 2 || len(got["carol"]) != 2 {
		t.Fatalf("users %v", got)
	}
	if _, err := s.Apply(DeleteScramCredential{User: "erin", Mechanism: "SCRAM-SHA-256"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("deleting a missing credential: %v", err)
	}
	if _, err := s.Apply(PutScramCredential{User: "erin", Mechanism: "SCRAM-SHA-256"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("an incomplete credential: %v", err)
	}
	last, err := s.Apply(DeleteScramCredential{User: "dave", Mechanism: "SCRAM-SHA-256"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := last.ScramUsers()["dave"]; ok {
		t.Fatal("a user without credentials is still listed")
	}
	snap, err := EncodeImage(last)
	if err != nil {
		t.Fatal(err)
	}
	fromSnap, err := DecodeImage(snap)
	if err != nil {
		t.Fatal(err)
	}
	reopened, _, err := OpenFileStore(fs.CrashClone(vfs.CrashOptions{}), "/d")
	if err != nil {
		t.Fatal(err)
	}
	for name, im := range map[string]*Image{"snapshot": fromSnap, "meta.json after a power cut": reopened.Image()} {
		c, ok := im.ScramCredential("carol", "SCRAM-SHA-512")
		if !ok || !bytes.Equal(c.StoredKey, cred.StoredKey) || c.Iterations != 4096 || len(im.ScramUsers()) != 1 {
			t.Fatalf("%s: %+v %v", name, c, im.ScramUsers())
		}
	}
}

// TestClientQuotaRecords: quota values are set and removed per entity,
// an entity with none left disappears, and they survive meta.json and a
// raft snapshot.
func TestClientQuotaRecords(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	s, _, err := OpenFileStore(fs, "/d")
	if err != nil {
		t.Fatal(err)
	}
	alice := QuotaEntity{User: "alice"}
	both := QuotaEntity{User: QuotaDefault, ClientID: "app"}
	if _, err := s.Apply(ClusterInit{ClusterID: "c1"}, AlterClientQuota{Entity: alice, Set: map[string]float64{"producer_byte_rate": 1024, "consumer_byte_rate": 2048}},
		AlterClientQuota{Entity: both, Set: map[string]float64{"request_percentage": 50}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(AlterClientQuota{}); !errors.Is(err, ErrConflict) {
		t.Fatalf("an empty entity: %v", err)
	}
	im, err := s.Apply(AlterClientQuota{Entity: alice, Remove: []string{"consumer_byte_rate"}}, AlterClientQuota{Entity: both, Remove: []string{"request_percentage"}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := EncodeImage(im)
	if err != nil {
		t.Fatal(err)
	}
	fromSnap, err := DecodeImage(snap)
	if err != nil {
		t.Fatal(err)
	}
	reopened, _, err := OpenFileStore(fs.CrashClone(vfs.CrashOptions{}), "/d")
	if err != nil {
		t.Fatal(err)
	}
	for name, im := range map[string]*Image{"image": im, "snapshot": fromSnap, "meta.json after a power cut": reopened.Image()} {
		q := im.ClientQuotas()
		if len(q) != 1 || len(q[alice]) != 1 || q[alice]["producer_byte_rate"] != 1024 {
			t.Fatalf("%s: %v", name, q)
		}
	}
}
