package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newQuotaCmd is "strand quota": client quotas over the Kafka admin API
// (AlterClientQuotas, DescribeClientQuotas).
func newQuotaCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Set, list and remove client quotas (produce and fetch byte rates)",
		Long: `Set, list and remove client quotas.

A quota applies to a user (--user, or --default-user for every user without
its own), a client id (--client-id, --default-client-id), or both. A client
past its rate is told to back off (ThrottleMillis) and its connection is
paused meanwhile, so it cannot slow the others down.

    strand quota set --user alice --producer-byte-rate 1048576
    strand quota set --default-client-id --consumer-byte-rate 10485760
    strand quota set --client-id batch-job --request-percentage 50   # half a core of handling
    strand quota list [-o json]
    strand quota remove --user alice --producer-byte-rate`,
	}
	addClientFlags(cmd, o, true, true)
	cmd.AddCommand(newQuotaSetCmd(o), newQuotaRemoveCmd(o), newQuotaListCmd(o))
	return cmd
}

// quotaEntityFlags name a quota entity.
type quotaEntityFlags struct {
	user, clientID             string
	defaultUser, defaultClient bool
}

func (f *quotaEntityFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.user, "user", "", "the user (SASL user name, or the mapped TLS principal's name)")
	cmd.Flags().StringVar(&f.clientID, "client-id", "", "the client id")
	cmd.Flags().BoolVar(&f.defaultUser, "default-user", false, "every user without a quota of its own")
	cmd.Flags().BoolVar(&f.defaultClient, "default-client-id", false, "every client id without a quota of its own")
}

func (f *quotaEntityFlags) entity() (kadm.ClientQuotaEntity, error) {
	var e kadm.ClientQuotaEntity
	switch {
	case f.user != "" && f.defaultUser:
		return nil, usageErr("--user and --default-user exclude each other")
	case f.user != "":
		e = append(e, kadm.ClientQuotaEntityComponent{Type: "user", Name: kmsg.StringPtr(f.user)})
	case f.defaultUser:
		e = append(e, kadm.ClientQuotaEntityComponent{Type: "user"})
	}
	switch {
	case f.clientID != "" && f.defaultClient:
		return nil, usageErr("--client-id and --default-client-id exclude each other")
	case f.clientID != "":
		e = append(e, kadm.ClientQuotaEntityComponent{Type: "client-id", Name: kmsg.StringPtr(f.clientID)})
	case f.defaultClient:
		e = append(e, kadm.ClientQuotaEntityComponent{Type: "client-id"})
	}
	if len(e) == 0 {
		return nil, usageErr("name whom the quota is for: --user, --client-id, --default-user or --default-client-id")
	}
	return e, nil
}

func entityString(e kadm.ClientQuotaEntity) string {
	var parts []string
	for _, c := range e {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		parts = append(parts, c.Type+"="+name)
	}
	return strings.Join(parts, ",")
}

func alterQuotas(cmd *cobra.Command, o *clientOptions, e kadm.ClientQuotaEntity, ops []kadm.AlterClientQuotaOp, verb string) error {
	return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
		if err != nil {
			return fmt.Errorf("%s quota: %w", verb, err)
		}
		for _, r := range res {
			if r.Err != nil {
				return kafkaError(fmt.Sprintf("cannot %s quota of %s", verb, entityString(e)), r.Err, &r.ErrMessage)
			}
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{"entity": entityString(e), "ops": ops})
		}
		for _, op := range ops {
			if op.Remove {
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s of %s\n", op.Key, entityString(e))
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "set %s of %s to %.0f\n", op.Key, entityString(e), op.Value)
			}
		}
		return nil
	})
}

func newQuotaSetCmd(o *clientOptions) *cobra.Command {
	var ent quotaEntityFlags
	var produce, fetch, request float64
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Set byte-rate and request-percentage quotas of a user and/or client id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := ent.entity()
			if err != nil {
				return err
			}
			var ops []kadm.AlterClientQuotaOp
			if cmd.Flags().Changed("producer-byte-rate") {
				ops = append(ops, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: produce})
			}
			if cmd.Flags().Changed("consumer-byte-rate") {
				ops = append(ops, kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: fetch})
			}
			if cmd.Flags().Changed("request-percentage") {
				ops = append(ops, kadm.AlterClientQuotaOp{Key: "request_percentage", Value: request})
			}
			if len(ops) == 0 {
				return usageErr("set --producer-byte-rate, --consumer-byte-rate and/or --request-percentage")
			}
			return alterQuotas(cmd, o, e, ops, "set")
		},
	}
	ent.register(cmd)
	cmd.Flags().Float64Var(&produce, "producer-byte-rate", 0, "bytes per second of produce requests (producer_byte_rate)")
	cmd.Flags().Float64Var(&fetch, "consumer-byte-rate", 0, "bytes per second of fetched records (consumer_byte_rate)")
	cmd.Flags().Float64Var(&request, "request-percentage", 0, "CPU time handling the client's requests, in percent of one core (request_percentage; 100: a core)")
	return cmd
}

func newQuotaRemoveCmd(o *clientOptions) *cobra.Command {
	var ent quotaEntityFlags
	var produce, fetch, request bool
	cmd := &cobra.Command{
		Use:     "remove",
		Aliases: []string{"rm", "delete"},
		Short:   "Remove quotas of a user and/or client id",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := ent.entity()
			if err != nil {
				return err
			}
			var ops []kadm.AlterClientQuotaOp
			if produce {
				ops = append(ops, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Remove: true})
			}
			if fetch {
				ops = append(ops, kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Remove: true})
			}
			if request {
				ops = append(ops, kadm.AlterClientQuotaOp{Key: "request_percentage", Remove: true})
			}
			if len(ops) == 0 {
				return usageErr("name what to remove: --producer-byte-rate, --consumer-byte-rate and/or --request-percentage")
			}
			return alterQuotas(cmd, o, e, ops, "remove")
		},
	}
	ent.register(cmd)
	cmd.Flags().BoolVar(&produce, "producer-byte-rate", false, "remove producer_byte_rate")
	cmd.Flags().BoolVar(&fetch, "consumer-byte-rate", false, "remove consumer_byte_rate")
	cmd.Flags().BoolVar(&request, "request-percentage", false, "remove request_percentage")
	return cmd
}

// listedQuota is "strand quota list -o json"'s element.
type listedQuota struct {
	Entity string             `json:"entity"`
	Values map[string]float64 `json:"values"`
}

func newQuotaListCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "describe"},
		Short:   "List every client quota",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				var out []listedQuota
				seen := map[string]bool{}
				// One ANY component per type: an entity with both parts
				// matches both, so it is listed once.
				for _, typ := range []string{"user", "client-id"} {
					desc, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: typ, MatchType: kmsg.QuotasMatchTypeAny}})
					if err != nil {
						return fmt.Errorf("list quotas: %w", err)
					}
					for _, d := range desc {
						k := entityString(d.Entity)
						if seen[k] {
							continue
						}
						seen[k] = true
						q := listedQuota{Entity: k, Values: map[string]float64{}}
						for _, v := range d.Values {
							q.Values[v.Key] = v.Value
						}
						out = append(out, q)
					}
				}
				if out == nil {
					out = []listedQuota{}
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), out)
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "ENTITY\tPRODUCER_BYTE_RATE\tCONSUMER_BYTE_RATE")
				for _, q := range out {
					rate := func(k string) string {
						if v, ok := q.Values[k]; ok {
							return fmt.Sprintf("%.0f", v)
						}
						return "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", q.Entity, rate("producer_byte_rate"), rate("consumer_byte_rate"))
				}
				return tw.Flush()
			})
		},
	}
}
