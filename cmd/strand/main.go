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
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitErr{code: exitUsage, err: err}
	})
	root.AddCommand(newServeCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newTopicCmd(), newProduceCmd(), newConsumeCmd(), newGroupCmd())
	root.AddCommand(newDLQCmd())
	return root
}
