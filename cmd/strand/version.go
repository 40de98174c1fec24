package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version describes this binary from what the Go toolchain recorded in
// it: the module version (a tag when built from one, "(devel)" from a
// checkout), the commit and its time, and the Go release.
func version() string {
	v, commit, when, dirty := "(devel)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	out := "strand " + v
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if dirty {
			commit += "+changes"
		}
		out += fmt.Sprintf(" (commit %s, %s)", commit, when)
	}
	return out + ", " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print Strand's version, commit and Go release",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "json":
				return writeJSON(cmd.OutOrStdout(), struct {
					Version string `json:"version"`
				}{version()})
			case "", "table":
				fmt.Fprintln(cmd.OutOrStdout(), version())
				return nil
			}
			return usageErr("--output: want table or json, got %q", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json for JSON")
	return cmd
}

// requireSubcommand is the Run of a command that only groups others
// (topic, group, dlq, …): without a subcommand, or with one it does not
// have, it fails with a usage error (exit 2) and, for a near miss, the
// names it probably meant — instead of printing help and exiting 0, which
// a script would take for success.
func requireSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		cmd.SetOut(cmd.ErrOrStderr())
		_ = cmd.Help()
		return &exitErr{code: exitUsage, err: fmt.Errorf("%q needs a subcommand (listed above)", cmd.CommandPath())}
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on the root's own path
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + quoteJoin(s) + "?"
	}
	return &exitErr{code: exitUsage, err: fmt.Errorf("%s (see %q)", msg, cmd.CommandPath()+" --help")}
}

func quoteJoin(names []string) string {
	out := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			out += " or "
		default:
			out += ", "
		}
		out += fmt.Sprintf("%q", n)
	}
	return out
}

// requireSubcommands gives c and every grouping command under it
// requireSubcommand as its Run, taking any arguments so that it, not
// cobra's argument check, judges them.
func requireSubcommands(c *cobra.Command) {
	if c.HasSubCommands() {
		c.Args, c.Run, c.RunE = cobra.ArbitraryArgs, nil, requireSubcommand
	}
	for _, sub := range c.Commands() {
		requireSubcommands(sub)
	}
}
