package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
)

// TestACLTable: every API key the dispatch table serves has a rule in
// acl's per-API table, so no handler can be served without saying what it
// asks the authorizer (issue 16, D.4). A key with a rule but no handler is
// fine: the table runs ahead of the handlers. Every rule's name must be
// the one kmsg gives its key, which catches a rule filed under the wrong
// number.
func TestACLTable(t *testing.T) {
	t.Parallel()
	for key := range apis {
		if _, ok := acl.RuleFor(key); !ok {
			t.Errorf("%s (key %d) is served but has no ACL rule in internal/acl/rules.go", kmsg.NameForKey(key), key)
		}
	}
	// kmsg's names differ from Kafka's in case (SASL, ID) and, for key 45,
	// in the word itself.
	kmsgNames := map[int16]string{45: "AlterPartitionAssignments"}
	for _, key := range acl.RuleKeys() {
		r, _ := acl.RuleFor(key)
		want := kmsg.NameForKey(key)
		got := r.Name
		if n, ok := kmsgNames[key]; ok {
			got = n
		}
		if !strings.EqualFold(got, want) {
			t.Errorf("key %d: rule named %q, kmsg calls it %q", key, r.Name, want)
		}
	}
}
