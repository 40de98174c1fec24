package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestInternalTopicGuarded: no client can change what __consumer_offsets
// needs (cleanup, retention, batch limits, segment size below them,
// validation, partition count); harmless tuning still works.
func TestInternalTopicGuarded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := startGroups(t, t.TempDir())
	defer b.Close()
	adm := adminClient(t, b.Addr())
	const topic = "__consumer_offsets"
	for _, c := range []struct{ name, value string }{
		{"max.message.bytes", "100"},
		{"cleanup.policy", "delete"},
		{"retention.ms", "1"},
		{"retention.bytes", "1000"},
		{"segment.bytes", "1048576"},
		{"strand.validation", "json"},
	} {
		v := c.value
		for _, incremental := range []bool{true, false} {
			var (
				rs  kadm.AlterConfigsResponses
				err error
			)
			if incremental {
				rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: c.name, Value: &v}}, topic)
			} else {
				rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: c.name, Value: &v}}, topic)
			}
			msg := ""
			if err == nil {
				err, msg = rs[0].Err, rs[0].ErrMessage
			}
			// A whole-state AlterConfigs also resets the other pinned configs,
			// so only the incremental refusal must name this one.
			if !errors.Is(err, kerr.PolicyViolation) || (incremental && !strings.Contains(msg, c.name)) {
				t.Errorf("%s=%s (incremental %v): %v, want POLICY_VIOLATION naming the config", c.name, c.value, incremental, err)
			}
		}
	}
	big := "209715200"
	if rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "segment.bytes", Value: &big}}, topic); err != nil || rs[0].Err != nil {
		t.Errorf("a larger segment.bytes: %v %v", err, rs[0].Err)
	}
	rs, err := adm.CreatePartitions(ctx, 3, topic)
	if err == nil {
		err = rs[topic].Err
	}
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Errorf("CreatePartitions on %s: %v", topic, err)
	}
}
