package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
)

// deletedTopic is "strand topic delete -o json"'s element.
type deletedTopic struct {
	Topic   string `json:"topic"`
	Deleted bool   `json:"deleted"`
}

func newTopicDeleteCmd(o *clientOptions) *cobra.Command {
	var ifExists bool
	cmd := &cobra.Command{
		Use:     "delete <topic>...",
		Aliases: []string{"rm"},
		Short:   "Delete topics and all their data",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				resps, err := adm.DeleteTopics(ctx, topics...)
				if err != nil {
					return fmt.Errorf("delete topics: %w", err)
				}
				var errs []error
				deleted := []deletedTopic{}
				for _, r := range resps.Sorted() {
					switch {
					case errors.Is(r.Err, kerr.UnknownTopicOrPartition) && ifExists:
					case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
						errs = append(errs, errNoTopic(r.Topic))
					case r.Err != nil:
						errs = append(errs, kafkaError(fmt.Sprintf("cannot delete topic %q", r.Topic), r.Err, &r.ErrMessage))
					default:
						deleted = append(deleted, deletedTopic{r.Topic, true})
						if !asJSON {
							fmt.Fprintf(cmd.OutOrStdout(), "deleted topic %q\n", r.Topic)
						}
					}
				}
				if asJSON {
					if err := writeJSON(cmd.OutOrStdout(), deleted); err != nil {
						return err
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed if a topic does not exist")
	return cmd
}
