package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
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
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, _ bool) error {
				w := cmd.OutOrStdout()
				if partitions > 0 {
					resps, err := adm.UpdatePartitions(ctx, partitions, topic)
					if err != nil {
						return fmt.Errorf("alter partitions: %w", err)
					}
					r, err := resps.On(topic, nil)
					if err == nil {
						err = r.Err
					}
					if err != nil {
						return fmt.Errorf("alter %q to %d partitions: %w%s", topic, partitions, err, detail(r.ErrMessage))
					}
					fmt.Fprintf(w, "topic %q now has %d partitions\n", topic, partitions)
				}
				if len(kv) == 0 && len(del) == 0 {
					return nil
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
					if r.Err != nil {
						errs = append(errs, fmt.Errorf("alter configs of %q: %w%s", r.Name, r.Err, detail(r.ErrMessage)))
					}
				}
				if len(errs) == 0 {
					fmt.Fprintf(w, "topic %q configs updated (%d set, %d deleted)\n", topic, len(kv), len(del))
				}
				return errors.Join(errs...)
			})
		},
	}
	f := cmd.Flags()
	f.IntVarP(&partitions, "partitions", "p", 0, "grow the topic to this many partitions")
	f.StringArrayVarP(&set, "config", "c", nil, "set a topic config key=value (repeatable)")
	f.StringArrayVar(&del, "delete-config", nil, "remove a topic config override, back to the default (repeatable)")
	return cmd
}
