package main

import (
	"github.com/spf13/cobra"
)

// groupSubcommands build the verbs under "strand group", one file each
// (group_list.go, …), sharing the client options of "strand group".
var groupSubcommands = []func(*clientOptions) *cobra.Command{
	newGroupListCmd,
	newGroupDescribeCmd,
	newGroupLagCmd,
	newGroupSeekCmd,
	newGroupAssignCmd,
	newGroupConfigCmd,
}

// newGroupCmd is "strand group": list, describe, lag and seek consumer
// groups. Like every client command it speaks only the Kafka protocol
// (kadm), so it works against Apache Kafka as well.
func newGroupCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe, show the lag of, and seek consumer groups",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, o, true, true)
	for _, build := range groupSubcommands {
		cmd.AddCommand(build(o))
	}
	return cmd
}
