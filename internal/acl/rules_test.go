package acl

import (
	"strings"
	"testing"
)

// TestRules checks the per-API table's shape: names unique, every check
// with alternatives and a way to fail, an error code wherever the target
// fixes one, and the rules that Kafka's handlers are known to ask.
func TestRules(t *testing.T) {
	t.Parallel()
	names := map[string]int16{}
	for _, key := range RuleKeys() {
		r, _ := RuleFor(key)
		if prev, dup := names[r.Name]; dup || r.Name == "" {
			t.Errorf("key %d: name %q (also key %d)", key, r.Name, prev)
		}
		names[r.Name] = key
		if len(r.Checks) == 0 && !strings.Contains(r.Note, "no authorization") && !strings.Contains(r.Note, "no check") {
			t.Errorf("%s: no checks and no note saying why", r.Name)
		}
		for i, c := range r.Checks {
			if len(c.AnyOf) == 0 || c.Denied == 0 {
				t.Errorf("%s check %d: %+v incomplete", r.Name, i, c)
			}
			last := c.AnyOf[len(c.AnyOf)-1].On
			perResource := last == OnConfigResources || last == OnCoordinatorKeys
			if (c.Code == 0) != perResource {
				t.Errorf("%s check %d: code %d for target %d", r.Name, i, c.Code, last)
			}
			for _, n := range c.AnyOf {
				if n.Op < OpRead || n.Op > OpDescribeTokens {
					t.Errorf("%s check %d: operation %v cannot be asked", r.Name, i, n.Op)
				}
			}
		}
	}
	if _, ok := RuleFor(4); ok {
		t.Error("LeaderAndIsr (ZooKeeper era) has a rule")
	}
	has := func(key int16, when Condition, denied Denial, code int16, want ...Need) {
		t.Helper()
		r, ok := RuleFor(key)
		if !ok {
			t.Fatalf("key %d: no rule", key)
		}
		for _, c := range r.Checks {
			if c.When == when && c.Denied == denied && c.Code == code && sameNeeds(c.AnyOf, want) {
				return
			}
		}
		t.Errorf("%s: no check %v %v %d %v in %+v", r.Name, when, denied, code, want, r.Checks)
	}
	has(0, WhenTransactional, FailRequest, 53, need(OnTransactionalIDs, OpWrite))
	has(0, Always, FailResource, 29, need(OnTopics, OpWrite))
	has(1, WhenFollower, FailResource, 29, need(OnCluster, OpClusterAction))
	has(1, WhenConsumer, FailResource, 29, need(OnTopics, OpRead))
	has(3, WhenListingAll, HideResource, 29, need(OnTopics, OpDescribe))
	has(3, WhenNamed, FailResource, 29, need(OnTopics, OpDescribe))
	has(3, WhenAutoCreate, FailResource, 29, need(OnCluster, OpCreate), need(OnTopics, OpCreate))
	has(8, Always, FailRequest, 30, need(OnGroups, OpRead))
	has(8, Always, FailResource, 29, need(OnTopics, OpRead))
	has(9, Always, FailRequest, 30, need(OnGroups, OpDescribe))
	has(10, Always, FailResource, 0, need(OnCoordinatorKeys, OpDescribe))
	for _, key := range []int16{11, 12, 13, 14, 68} {
		has(key, Always, FailRequest, 30, need(OnGroups, OpRead))
	}
	has(16, Always, HideResource, 30, need(OnCluster, OpDescribe), need(OnGroups, OpDescribe))
	has(19, Always, FailResource, 29, need(OnCluster, OpCreate), need(OnTopics, OpCreate))
	has(20, Always, FailResource, 29, need(OnTopics, OpDelete))
	has(22, WhenIdempotent, FailRequest, 31, need(OnCluster, OpIdempotentWrite), need(OnAnyTopic, OpWrite))
	has(28, Always, FailRequest, 30, need(OnGroups, OpRead))
	has(28, Always, FailRequest, 53, need(OnTransactionalIDs, OpWrite))
	has(29, Always, FailRequest, 31, need(OnCluster, OpDescribe))
	has(30, Always, FailRequest, 31, need(OnCluster, OpAlter))
	has(31, Always, FailRequest, 31, need(OnCluster, OpAlter))
	has(32, Always, FailResource, 0, need(OnConfigResources, OpDescribeConfigs))
	has(33, Always, FailResource, 0, need(OnConfigResources, OpAlterConfigs))
	has(44, Always, FailResource, 0, need(OnConfigResources, OpAlterConfigs))
	for _, key := range []int16{52, 53, 54, 56, 58, 59, 62, 63, 67, 70, 73, 82} {
		has(key, Always, FailRequest, 31, need(OnCluster, OpClusterAction))
	}
}

func sameNeeds(a, b []Need) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
