package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
)

// newACLCmd is "strand acl": create, list and delete ACLs over the Kafka
// admin API (CreateAcls, DescribeAcls, DeleteAcls), so it works against
// any broker running an authorizer, Strand or Kafka.
func newACLCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Create, list and delete ACLs (the broker needs --authorizer)",
		Long: `Create, list and delete access-control lists.

An ACL allows or denies a principal (User:name, or User:* for everyone),
connecting from a host (an IP address, or * for any), an operation (read,
write, create, delete, alter, describe, cluster-action, describe-configs,
alter-configs, idempotent-write, all) on resources: topics, groups,
transactional ids or the cluster, named literally (the default; "*" names
every resource of the type) or by prefix (--prefixed). A deny wins over any
allow. Examples:

    strand acl create --allow User:alice --operation write --operation describe --topic orders. --prefixed
    strand acl create --allow User:alice --operation read --group billing
    strand acl list --principal User:alice
    strand acl delete --topic orders. --prefixed`,
	}
	addClientFlags(cmd, o, true, true)
	cmd.AddCommand(newACLCreateCmd(o), newACLListCmd(o), newACLDeleteCmd(o))
	return cmd
}

// aclResources are the resource flags create, list and delete share.
type aclResources struct {
	topics, groups, txnIDs []string
	cluster                bool
	prefixed, match        bool
}

func (r *aclResources) flags(cmd *cobra.Command, filter bool) {
	f := cmd.Flags()
	f.StringArrayVar(&r.topics, "topic", nil, "a topic name (or prefix with --prefixed; * for every topic); repeatable")
	f.StringArrayVar(&r.groups, "group", nil, "a consumer group id (or prefix); repeatable")
	f.StringArrayVar(&r.txnIDs, "transactional-id", nil, "a transactional id (or prefix); repeatable")
	f.BoolVar(&r.cluster, "cluster", false, "the cluster itself (kafka-cluster)")
	f.BoolVar(&r.prefixed, "prefixed", false, "the names are prefixes (PREFIXED pattern)")
	if filter {
		f.BoolVar(&r.match, "match", false, "select every ACL that applies to the named resources (literal, * and prefixes: Kafka's MATCH filter)")
	}
}

func (r *aclResources) any() bool {
	return len(r.topics)+len(r.groups)+len(r.txnIDs) > 0 || r.cluster
}

// apply puts the resources on b; for a filter without any, every resource.
func (r *aclResources) apply(b *kadm.ACLBuilder, filter bool) error {
	if r.prefixed && r.match {
		return usageErr("--prefixed and --match exclude each other")
	}
	if filter && !r.any() {
		b.AnyResource()
	}
	if len(r.topics) > 0 {
		b.Topics(r.topics...)
	}
	if len(r.groups) > 0 {
		b.Groups(r.groups...)
	}
	if len(r.txnIDs) > 0 {
		b.TransactionalIDs(r.txnIDs...)
	}
	if r.cluster {
		b.Clusters()
	}
	switch {
	case r.prefixed:
		b.ResourcePatternType(kadm.ACLPatternPrefixed)
	case r.match:
		b.ResourcePatternType(kadm.ACLPatternMatch)
	case filter && !r.any():
		b.ResourcePatternType(kadm.ACLPatternAny)
	default:
		b.ResourcePatternType(kadm.ACLPatternLiteral)
	}
	return nil
}

// parseOperations reads --operation values with acl's names ("write",
// "describe-configs", "IdempotentWrite", …).
func parseOperations(names []string) ([]kadm.ACLOperation, error) {
	var ops []kadm.ACLOperation
	for _, n := range names {
		op, err := acl.ParseOperation(n)
		if err != nil || op == acl.OpUnknown {
			return nil, usageErr("--operation %q: want one of read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write, all", n)
		}
		ops = append(ops, kadm.ACLOperation(op))
	}
	return ops, nil
}

// aclRow is one ACL as "strand acl … -o json" prints it.
type aclRow struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

func newACLRow(principal, host string, typ kmsg.ACLResourceType, name string, pattern kadm.ACLPattern, op kadm.ACLOperation, perm kmsg.ACLPermissionType) aclRow {
	return aclRow{Principal: principal, Host: host, ResourceType: acl.ResourceType(typ).String(), Name: name,
		PatternType: acl.PatternType(pattern).String(), Operation: acl.Operation(op).String(), Permission: acl.Permission(perm).String()}
}

// printACLs writes rows as a table or JSON.
func printACLs(cmd *cobra.Command, rows []aclRow, asJSON bool) error {
	slices.SortFunc(rows, func(a, b aclRow) int {
		return strings.Compare(a.ResourceType+"\x00"+a.Name+"\x00"+a.Principal+"\x00"+a.Operation, b.ResourceType+"\x00"+b.Name+"\x00"+b.Principal+"\x00"+b.Operation)
	})
	if rows == nil {
		rows = []aclRow{}
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), rows)
	}
	tw := newTable(cmd.OutOrStdout())
	fmt.Fprintln(tw, "PRINCIPAL\tHOST\tRESOURCE\tNAME\tPATTERN\tOPERATION\tPERMISSION")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Principal, r.Host, r.ResourceType, r.Name, r.PatternType, r.Operation, r.Permission)
	}
	return tw.Flush()
}

func newACLCreateCmd(o *clientOptions) *cobra.Command {
	var res aclResources
	var allow, deny, hosts, opNames []string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Allow or deny principals operations on resources",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(allow)+len(deny) == 0 {
				return usageErr("name a principal with --allow or --deny (e.g. --allow User:alice)")
			}
			if !res.any() {
				return usageErr("name a resource: --topic, --group, --transactional-id or --cluster")
			}
			if len(opNames) == 0 {
				return usageErr("name an operation with --operation (e.g. --operation write)")
			}
			ops, err := parseOperations(opNames)
			if err != nil {
				return err
			}
			b := kadm.NewACLs().Operations(ops...)
			if len(allow) > 0 {
				b.Allow(allow...).AllowHosts(hosts...)
			}
			if len(deny) > 0 {
				b.Deny(deny...).DenyHosts(hosts...)
			}
			if err := res.apply(b, false); err != nil {
				return err
			}
			if err := b.ValidateCreate(); err != nil {
				return usageErr("%v", err)
			}
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				results, err := adm.CreateACLs(ctx, b)
				if err != nil {
					return fmt.Errorf("create ACLs: %w", err)
				}
				var errs []error
				var rows []aclRow
				for _, r := range results {
					row := newACLRow(r.Principal, r.Host, r.Type, r.Name, r.Pattern, r.Operation, r.Permission)
					if r.Err != nil {
						errs = append(errs, kafkaError(fmt.Sprintf("cannot create ACL %s %s %s on %s %q", row.Permission, row.Principal, row.Operation, row.ResourceType, row.Name), r.Err, &r.ErrMessage))
						continue
					}
					rows = append(rows, row)
				}
				if asJSON {
					if err := printACLs(cmd, rows, true); err != nil {
						return err
					}
				} else {
					for _, r := range rows {
						fmt.Fprintf(cmd.OutOrStdout(), "created: %s %s %s on %s %s %q from host %s\n", r.Permission, r.Principal, r.Operation, r.PatternType, r.ResourceType, r.Name, r.Host)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().StringArrayVar(&allow, "allow", nil, "principal to allow (User:name, User:*); repeatable")
	cmd.Flags().StringArrayVar(&deny, "deny", nil, "principal to deny; repeatable")
	cmd.Flags().StringArrayVar(&hosts, "host", nil, "host (IP address) the ACL applies to; default * (any); repeatable")
	cmd.Flags().StringArrayVar(&opNames, "operation", nil, "operation: read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write, all; repeatable")
	res.flags(cmd, false)
	return cmd
}

// aclFilter builds list's and delete's filter: principals and hosts of
// either permission unless --allow-only or --deny-only.
type aclFilter struct {
	res        aclResources
	principals []string
	hosts      []string
	opNames    []string
	permission string
}

func (f *aclFilter) flags(cmd *cobra.Command) {
	f.res.flags(cmd, true)
	cmd.Flags().StringArrayVar(&f.principals, "principal", nil, "only ACLs of this principal; repeatable")
	cmd.Flags().StringArrayVar(&f.hosts, "host", nil, "only ACLs for this host; repeatable")
	cmd.Flags().StringArrayVar(&f.opNames, "operation", nil, "only ACLs for this operation; repeatable")
	cmd.Flags().StringVar(&f.permission, "permission", "any", "allow, deny or any")
}

func (f *aclFilter) builder() (*kadm.ACLBuilder, error) {
	b := kadm.NewACLs()
	if err := f.res.apply(b, true); err != nil {
		return nil, err
	}
	ops := []kadm.ACLOperation{kadm.OpAny}
	if len(f.opNames) > 0 {
		var err error
		if ops, err = parseOperations(f.opNames); err != nil {
			return nil, err
		}
	}
	b.Operations(ops...)
	switch strings.ToLower(f.permission) {
	case "any", "allow", "deny":
	default:
		return nil, usageErr("--permission %q: want allow, deny or any", f.permission)
	}
	if p := strings.ToLower(f.permission); p != "deny" {
		b.Allow(f.principals...).AllowHosts(f.hosts...)
	}
	if p := strings.ToLower(f.permission); p != "allow" {
		b.Deny(f.principals...).DenyHosts(f.hosts...)
	}
	return b, nil
}

func newACLListCmd(o *clientOptions) *cobra.Command {
	var f aclFilter
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "describe"},
		Short:   "List ACLs (all, or those the filter flags select)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := f.builder()
			if err != nil {
				return err
			}
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				results, err := adm.DescribeACLs(ctx, b)
				if err != nil {
					return fmt.Errorf("list ACLs: %w", err)
				}
				var rows []aclRow
				seen := map[aclRow]bool{}
				for _, r := range results {
					if r.Err != nil {
						return kafkaError("cannot list ACLs", r.Err, &r.ErrMessage)
					}
					for _, d := range r.Described {
						row := newACLRow(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission)
						if !seen[row] { // overlapping filters describe one ACL twice
							seen[row] = true
							rows = append(rows, row)
						}
					}
				}
				return printACLs(cmd, rows, asJSON)
			})
		},
	}
	f.flags(cmd)
	return cmd
}

func newACLDeleteCmd(o *clientOptions) *cobra.Command {
	var f aclFilter
	var all bool
	cmd := &cobra.Command{
		Use:     "delete",
		Aliases: []string{"rm"},
		Short:   "Delete the ACLs the filter flags select",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !all && !f.res.any() && len(f.principals) == 0 {
				return usageErr("name what to delete (--topic, --group, --transactional-id, --cluster, --principal), or --all")
			}
			b, err := f.builder()
			if err != nil {
				return err
			}
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				results, err := adm.DeleteACLs(ctx, b)
				if err != nil {
					return fmt.Errorf("delete ACLs: %w", err)
				}
				var rows []aclRow
				var errs []error
				for _, r := range results {
					if r.Err != nil {
						errs = append(errs, kafkaError("cannot delete ACLs", r.Err, &r.ErrMessage))
						continue
					}
					for _, d := range r.Deleted {
						if d.Err != nil {
							errs = append(errs, kafkaError("cannot delete ACL", d.Err, &d.ErrMessage))
							continue
						}
						rows = append(rows, newACLRow(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission))
					}
				}
				if asJSON {
					if err := printACLs(cmd, rows, true); err != nil {
						return err
					}
				} else {
					for _, r := range rows {
						fmt.Fprintf(cmd.OutOrStdout(), "deleted: %s %s %s on %s %s %q from host %s\n", r.Permission, r.Principal, r.Operation, r.PatternType, r.ResourceType, r.Name, r.Host)
					}
					if len(rows) == 0 && len(errs) == 0 {
						fmt.Fprintln(cmd.OutOrStdout(), "no ACL matched")
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	f.flags(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "with no other filter: delete every ACL")
	return cmd
}
