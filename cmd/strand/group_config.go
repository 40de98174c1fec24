package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupConfig is one group config as "strand group config" prints it.
type groupConfig struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"` // "group" (set on it) or "default"
}

func newGroupConfigCmd(o *clientOptions) *cobra.Command {
	var set, del []string
	cmd := &cobra.Command{
		Use:   "config GROUP",
		Short: "Show, set or delete a group's configs (share groups: lock duration, delivery limit, dead-letter topic, …)",
		Long: `Show a group's configs (DescribeConfigs on a GROUP resource), after setting
(--config k=v) or deleting (--delete-config k) some with IncrementalAlterConfigs.
Strand serves the share-group configs of KIP-932 and KIP-1191 (docs/SHARE.md).`,
		Example: `  strand group config workers --config errors.deadletterqueue.topic.name=jobs.dlq
  strand group config workers --config share.delivery.count.limit=3 --delete-config share.record.lock.duration.ms`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			kv, err := parseKV("config", set)
			if err != nil {
				return err
			}
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
				if len(kv) > 0 || len(del) > 0 {
					if err := alterGroupConfigs(ctx, cl, group, kv, del); err != nil {
						return err
					}
				}
				cfgs, err := describeGroupConfigs(ctx, cl, group)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), cfgs)
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE")
				for _, c := range cfgs {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, orDash(c.Value), c.Source)
				}
				return tw.Flush()
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&set, "config", "c", nil, "set a group config key=value (repeatable)")
	f.StringArrayVar(&del, "delete-config", nil, "remove a group config, back to the default (repeatable)")
	return cmd
}

func alterGroupConfigs(ctx context.Context, cl *kgo.Client, group string, set map[string]string, del []string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, k := range slices.Sorted(maps.Keys(set)) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(set[k])
		res.Configs = append(res.Configs, c)
	}
	for _, k := range del {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = k, kmsg.IncrementalAlterConfigOpDelete
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("alter configs of group %q: %w", group, err)
	}
	if r := resp.Resources[0]; r.ErrorCode != 0 {
		return kafkaError(fmt.Sprintf("cannot alter group %q", group), kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	return nil
}

func describeGroupConfigs(ctx context.Context, cl *kgo.Client, group string) ([]groupConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe configs of group %q: %w", group, err)
	}
	r := resp.Resources[0]
	if r.ErrorCode != 0 {
		return nil, kafkaError(fmt.Sprintf("cannot describe group %q's configs", group), kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	out := []groupConfig{}
	for _, c := range r.Configs {
		g := groupConfig{Name: c.Name, Source: "default"}
		if c.Value != nil {
			g.Value = *c.Value
		}
		if c.Source == kmsg.ConfigSourceGroupConfig {
			g.Source = "group"
		}
		out = append(out, g)
	}
	return out, nil
}
