package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTopicAlterCmd(o *clientOptions) *cobra.Command {
	var (
		partitions int
		set        []string
		del        []string
	)
	cmd := &cobra.Command{
		Use:   "alter <topic>",
		Short: "Add partitions, set or delete topic configs",
		Example: `  strand topic alter orders --partitions 6
  strand topic alter orders --config retention.ms=86400000 --delete-config retention.bytes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			kv, err := parseKV("config", set)
			if err != nil {
				return err
			}
			if partitions <= 0 && len(kv) == 0 && len(del) == 0 {
				return usageErr("nothing to alter: pass --partitions, --config or --delete-config")
			}
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
				adm := kadm.NewClient(cl)
				w := cmd.OutOrStdout()
				if asJSON {
					w = io.Discard // the prose; one JSON object at the end instead
				}
				if partitions > 0 {
					resps, err := adm.UpdatePartitions(ctx, partitions, topic)
					if err != nil {
						return fmt.Errorf("alter partitions: %w", err)
					}
					r, err := resps.On(topic, nil)
					if err == nil {
						err = r.Err
					}
					switch {
					case errors.Is(err, kerr.InvalidPartitions):
						if td, lerr := adm.ListTopics(ctx, topic); lerr == nil && len(td[topic].Partitions) >= partitions {
							n := len(td[topic].Partitions)
							return fmt.Errorf("topic %q has %d partitions and partitions can only be added (removing some would move keys): ask for more than %d", topic, n, n)
						}
						return kafkaError(fmt.Sprintf("cannot change topic %q to %d partitions", topic, partitions), err, &r.ErrMessage)
					case errors.Is(err, kerr.UnknownTopicOrPartition):
						return errNoTopic(topic)
					case err != nil:
						return kafkaError(fmt.Sprintf("cannot change topic %q to %d partitions", topic, partitions), err, &r.ErrMessage)
					}
					fmt.Fprintf(w, "topic %q now has %d partitions\n", topic, partitions)
				}
				if len(kv) == 0 && len(del) == 0 {
					return alteredJSON(cmd, asJSON, alteredTopic{Topic: topic, Partitions: partitions})
				}
				var alters []kadm.AlterConfig
				for k, v := range kv {
					alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
				}
				for _, k := range del {
					alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
				}
				resps, err := adm.AlterTopicConfigs(ctx, alters, topic)
				if err != nil {
					return fmt.Errorf("alter configs: %w", err)
				}
				var errs []error
				for _, r := range resps {
					switch {
					case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
						errs = append(errs, errNoTopic(r.Name))
					case r.Err != nil:
						errs = append(errs, kafkaError(fmt.Sprintf("cannot alter topic %q", r.Name), r.Err, &r.ErrMessage))
					}
				}
				if len(errs) > 0 {
					return errors.Join(errs...)
				}
				fmt.Fprintf(w, "topic %q configs updated (%d set, %d deleted)\n", topic, len(kv), len(del))
				awaitConfigs(ctx, cmd, cl, topic, kv, del)
				return alteredJSON(cmd, asJSON, alteredTopic{Topic: topic, Partitions: partitions, Set: kv, Deleted: del})
			})
		},
	}
	f := cmd.Flags()
	f.IntVarP(&partitions, "partitions", "p", 0, "grow the topic to this many partitions")
	f.StringArrayVarP(&set, "config", "c", nil, "set a topic config key=value (repeatable)")
	f.StringArrayVar(&del, "delete-config", nil, "remove a topic config override, back to the default (repeatable)")
	return cmd
}

// alteredTopic is "strand topic alter -o json": what changed.
type alteredTopic struct {
	Topic      string            `json:"topic"`
	Partitions int               `json:"partitions,omitempty"` // the new count, when it grew
	Set        map[string]string `json:"set,omitempty"`
	Deleted    []string          `json:"deleted,omitempty"`
}

func alteredJSON(cmd *cobra.Command, asJSON bool, a alteredTopic) error {
	if !asJSON {
		return nil
	}
	return writeJSON(cmd.OutOrStdout(), a)
}

// awaitConfigs waits (up to 5 s) until every broker answers DescribeConfigs
// with the change: in a cluster each node applies it from the metadata a
// moment after the controller commits it, and a command run right after
// (a produce, a redrive) should meet the new value wherever its partitions
// lead. A broker still behind is named on stderr; the change is made.
func awaitConfigs(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, topic string, set map[string]string, del []string) {
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(meta.Brokers) < 2 {
		return // one node answered the alter itself
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, b := range meta.Brokers {
		for !brokerHas(wait, cl, b.NodeID, topic, set, del) {
			select {
			case <-wait.Done():
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: node %d does not show the change yet; it applies it from the cluster's metadata shortly\n", b.NodeID)
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// brokerHas reports whether broker id's DescribeConfigs of topic shows
// the configs set and those deleted back at their defaults.
func brokerHas(ctx context.Context, cl *kgo.Client, id int32, topic string, set map[string]string, del []string) bool {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		return false
	}
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		got[c.Name] = c
	}
	for k, v := range set {
		if c, ok := got[k]; !ok || c.Value == nil || !strings.EqualFold(*c.Value, strings.TrimSpace(v)) {
			return false
		}
	}
	for _, k := range del {
		if c, ok := got[k]; ok && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			return false
		}
	}
	return true
}
