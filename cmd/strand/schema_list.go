package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/sr"
)

// schemaRow is one line of "strand schema list".
type schemaRow struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Type    string `json:"type"`
}

func newSchemaListCmd(o *registryOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list [subject]",
		Short: "List subjects with their latest version, or one subject's versions",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd.Context())
			defer cancel()
			rows := []schemaRow{}
			if len(args) == 1 {
				all, err := cl.Schemas(ctx, args[0])
				if err != nil {
					return o.registryErr(fmt.Errorf("list %s: %w", args[0], err))
				}
				for _, s := range all {
					rows = append(rows, schemaRow{s.Subject, s.Version, s.ID, s.Type.String()})
				}
			} else {
				subjects, err := cl.Subjects(ctx)
				if err != nil {
					return o.registryErr(fmt.Errorf("list subjects: %w", err))
				}
				for _, subj := range subjects {
					s, err := cl.SchemaByVersion(ctx, subj, -1)
					if err != nil {
						return o.registryErr(fmt.Errorf("latest version of %s: %w", subj, err))
					}
					rows = append(rows, schemaRow{subj, s.Version, s.ID, s.Type.String()})
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "SUBJECT\tVERSION\tID\tTYPE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.Subject, r.Version, r.ID, r.Type)
			}
			return tw.Flush()
		},
	}
}

func newSchemaGetCmd(o *registryOptions) *cobra.Command {
	var id int
	cmd := &cobra.Command{
		Use:   "get <subject> [version] | --id N",
		Short: "Print a schema: a subject's version (default latest), or the schema with a global id",
		Args: func(cmd *cobra.Command, args []string) error {
			if id > 0 && len(args) > 0 || id <= 0 && (len(args) < 1 || len(args) > 2) {
				return usageErr("give a subject (and a version), or --id")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd.Context())
			defer cancel()
			var s sr.SubjectSchema
			if id > 0 {
				sch, err := cl.SchemaByID(ctx, id)
				if err != nil {
					return o.registryErr(fmt.Errorf("schema id %d: %w", id, err))
				}
				s = sr.SubjectSchema{ID: id, Schema: sch}
			} else {
				v := -1
				if len(args) == 2 {
					if v, err = parseSchemaVersion(args[1]); err != nil {
						return err
					}
				}
				if s, err = cl.SchemaByVersion(ctx, args[0], v); err != nil {
					return o.registryErr(fmt.Errorf("%s version %s: %w", args[0], versionName(v), err))
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"subject": s.Subject, "version": s.Version, "id": s.ID,
					"type": s.Type.String(), "references": s.References, "schema": s.Schema.Schema})
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), s.Schema.Schema)
			return err
		},
	}
	cmd.Flags().IntVar(&id, "id", 0, "the schema with this global id")
	return cmd
}

func versionName(v int) string {
	if v == -1 {
		return "latest"
	}
	return strconv.Itoa(v)
}
