package main

import (
	"github.com/spf13/cobra"
)

// topicSubcommands build the verbs under "strand topic". Each verb lives in
// its own file (topic_create.go, …) and receives the shared client options,
// so --brokers and --output are flags of "strand topic" itself and reach
// every verb. A file adds its verb with addTopicSubcommand in an init func:
//
//	func init() { addTopicSubcommand(newTopicTableCmd) }
var topicSubcommands = []func(*clientOptions) *cobra.Command{
	newTopicCreateCmd,
	newTopicListCmd,
	newTopicDescribeCmd,
	newTopicAlterCmd,
	newTopicDeleteCmd,
}

// addTopicSubcommand registers another "strand topic" verb. Call it from an
// init func; newTopicCmd builds the verbs in registration order.
func addTopicSubcommand(build func(*clientOptions) *cobra.Command) {
	topicSubcommands = append(topicSubcommands, build)
}

// newTopicCmd is "strand topic": create, list, describe, alter and delete
// topics over the Kafka admin API.
func newTopicCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter, delete and move topics",
	}
	addClientFlags(cmd, o, true, true)
	for _, build := range topicSubcommands {
		cmd.AddCommand(build(o))
	}
	return cmd
}
