// Command strand is Strand's command-line interface: one file per verb
// (serve.go, …). It only parses flags and wires the embed API; it must never
// hold broker logic.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(exitCode(err))
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "strand",
		Short:         "Strand: a Kafka-wire-compatible partitioned-log broker",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the version and exit") // no -v: produce's -v is --value
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitErr{code: exitUsage, err: err}
	})
	root.AddCommand(newServeCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newTopicCmd(), newProduceCmd(), newConsumeCmd(), newGroupCmd())
	root.AddCommand(newDLQCmd(), newSchemaCmd(), newTxnCmd())
	root.AddCommand(newClusterCmd())
	root.AddCommand(newACLCmd(), newUserCmd(), newQuotaCmd(), newCertCmd())
	root.AddCommand(newVersionCmd())
	requireSubcommands(root)
	markUsageErrors(root)
	return root
}

const rootLong = `Strand: a Kafka-wire-compatible partitioned-log broker.

"strand serve" runs a broker; "strand cert" makes the TLS certificates of a
cluster, offline. Every other command is a Kafka client: it
talks to --brokers (default 127.0.0.1:9092, or $STRAND_BROKERS), so it works
against Apache Kafka and Redpanda as well; -o json prints JSON for scripts.

Exit codes: 0 success; 1 the request failed; 2 bad flags or arguments;
3 no broker reachable at --brokers.`
