package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newTopicCreateCmd(o *clientOptions) *cobra.Command {
	var (
		partitions  int32
		replication int16
		configs     []string
		ifNotExists bool
	)
	cmd := &cobra.Command{
		Use:   "create <topic>...",
		Short: "Create topics",
		Example: `  strand topic create orders --partitions 3
  strand topic create users --config cleanup.policy=compact --config retention.ms=-1`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			kv, err := parseKV("config", configs)
			if err != nil {
				return err
			}
			cfg := make(map[string]*string, len(kv))
			for k, v := range kv {
				cfg[k] = &v
			}
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, _ bool) error {
				resps, err := adm.CreateTopics(ctx, partitions, replication, cfg, topics...)
				if err != nil {
					return fmt.Errorf("create topics: %w", err)
				}
				type created struct {
					Topic       string `json:"topic"`
					Partitions  int32  `json:"partitions"`
					Replication int16  `json:"replication_factor"`
					Existed     bool   `json:"existed,omitempty"`
				}
				var out []created
				var errs []error
				for _, r := range resps.Sorted() {
					existed := errors.Is(r.Err, kerr.TopicAlreadyExists)
					switch {
					case existed && ifNotExists:
					case existed:
						errs = append(errs, fmt.Errorf("topic %q already exists — see \"strand topic describe %s\", or pass --if-not-exists", r.Topic, r.Topic))
						continue
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("create %q: %w%s", r.Topic, r.Err, detail(r.ErrMessage)))
						continue
					}
					out = append(out, created{r.Topic, r.NumPartitions, r.ReplicationFactor, existed})
				}
				w := cmd.OutOrStdout()
				if asJSON {
					if out == nil {
						out = []created{}
					}
					if err := writeJSON(w, out); err != nil {
						return err
					}
				} else {
					for _, c := range out {
						if c.Existed {
							fmt.Fprintf(w, "topic %q already exists\n", c.Topic)
							continue
						}
						fmt.Fprintf(w, "created topic %q (%s, replication factor %d)\n", c.Topic, plural(int(c.Partitions), "partition"), c.Replication)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	f := cmd.Flags()
	f.Int32VarP(&partitions, "partitions", "p", -1, "number of partitions (default: the broker's num.partitions)")
	f.Int16VarP(&replication, "replication-factor", "r", -1, "replicas per partition (default: the broker's default)")
	f.StringArrayVarP(&configs, "config", "c", nil, "topic config key=value (repeatable), e.g. retention.ms=3600000")
	f.BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the topic already exists")
	return cmd
}

// plural is "1 partition", "3 partitions".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// detail formats a broker's optional error message as a suffix.
func detail(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
