package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strandmq/strand/internal/ingest"
)

// newDLQCmd is "strand dlq": list a topic's quarantined records with their
// reasons, and redrive those its validator now accepts. Like every client
// command it speaks only the Kafka protocol (kgo, kadm); the validation
// rules come from the topic's configs and are evaluated by the CLI with the
// same code the broker uses (package ingest).
func newDLQCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List and redrive a topic's quarantined (dead-letter) records",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, o, true, true)
	cmd.AddCommand(newDLQListCmd(o), newDLQRedriveCmd(o))
	return cmd
}

// Config names the CLI reads (the broker package owns their definitions; the
// CLI sees them only over the wire).
const (
	cfgValidation            = "strand.validation"
	cfgValidationSchema      = "strand.validation.schema"
	cfgValidationKeyRequired = "strand.validation.key.required"
	cfgDLQTopic              = "strand.dlq.topic"
)

// dlqTopicInfo is what the DLQ commands learn about a topic.
type dlqTopicInfo struct {
	topic      string
	dlq        string
	partitions int32 // the topic's
	spec       ingest.Spec
}

// missing explains a DLQ that does not exist (err from reading it): a
// topic that is not validated has none, and so nothing to list or
// redrive; a validated one gets it with its first invalid record (nil:
// nothing quarantined yet).
func (info dlqTopicInfo) missing(err error) error {
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return err
	}
	if info.spec.Mode == ingest.ModeNone {
		return fmt.Errorf("topic %q is not validated (strand.validation is none), so it has no dead letters — turn validation on with \"strand topic alter %s --config strand.validation=json\"", info.topic, info.topic)
	}
	return nil
}

// describeDLQ reads the topic's validation configs and finds its DLQ.
func describeDLQ(ctx context.Context, adm *kadm.Client, topic string) (dlqTopicInfo, error) {
	info := dlqTopicInfo{topic: topic, dlq: ingest.DefaultDLQTopic(topic), spec: ingest.Spec{Mode: ingest.ModeNone}}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return info, fmt.Errorf("describe %s: %w", topic, err)
	}
	td, ok := details[topic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return info, errNoTopic(topic)
	case td.Err != nil:
		return info, fmt.Errorf("topic %s: %w", topic, td.Err)
	}
	info.partitions = int32(len(td.Partitions))
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return info, fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return info, fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	for _, c := range rc.Configs {
		v := c.MaybeValue()
		switch c.Key {
		case cfgValidation:
			if m, err := ingest.ParseMode(v); err == nil {
				info.spec.Mode = m
			}
		case cfgValidationSchema:
			info.spec.Schema = v
		case cfgValidationKeyRequired:
			info.spec.KeyRequired = v == "true"
		case cfgDLQTopic:
			if v != "" {
				info.dlq = v
			}
		}
	}
	return info, nil
}
