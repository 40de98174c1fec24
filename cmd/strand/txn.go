package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// newTxnCmd is "strand txn": list and describe transactions, and abort a
// hanging one (Kafka's kafka-transactions.sh list | describe | abort).
func newTxnCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "txn",
		Short: "List, describe and abort transactions",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, o, true, true)
	cmd.AddCommand(newTxnListCmd(o), newTxnDescribeCmd(o), newTxnAbortCmd(o))
	return cmd
}

// txnRow is one transactional id, as list and describe show it.
type txnRow struct {
	TransactionalID string   `json:"transactional_id"`
	State           string   `json:"state"`
	ProducerID      int64    `json:"producer_id"`
	ProducerEpoch   int16    `json:"producer_epoch"`
	Coordinator     int32    `json:"coordinator"`
	TimeoutMs       int32    `json:"timeout_ms,omitempty"`
	StartTimestamp  string   `json:"start_timestamp,omitempty"`
	Partitions      []string `json:"partitions,omitempty"`
}

func newTxnListCmd(o *clientOptions) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List transactional ids and their states",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				listed, err := adm.ListTransactions(ctx, nil, states)
				if err != nil {
					return fmt.Errorf("list transactions: %w", err)
				}
				rows := []txnRow{}
				for _, t := range listed.Sorted() {
					rows = append(rows, txnRow{TransactionalID: t.TxnID, State: t.State, ProducerID: t.ProducerID, ProducerEpoch: -1, Coordinator: t.Coordinator})
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), rows)
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "TRANSACTIONAL ID\tSTATE\tPRODUCER ID\tCOORDINATOR")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", r.TransactionalID, r.State, r.ProducerID, r.Coordinator)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only ids in these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort)")
	return cmd
}

func newTxnDescribeCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "describe TRANSACTIONAL_ID...",
		Short: "Show a transaction: state, producer id and epoch, timeout, start, partitions",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				described, err := adm.DescribeTransactions(ctx, ids...)
				if err != nil {
					return fmt.Errorf("describe transactions: %w", err)
				}
				rows := []txnRow{}
				for _, id := range ids {
					d, ok := described[id]
					if !ok {
						return fmt.Errorf("transactional id %q: no answer from its coordinator", id)
					}
					if d.Err != nil {
						return fmt.Errorf("transactional id %q: %w — \"strand txn list\" shows the ids there are", id, d.Err)
					}
					r := txnRow{TransactionalID: id, State: d.State, ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch,
						Coordinator: d.Coordinator, TimeoutMs: d.TimeoutMillis}
					if d.StartTimestamp > 0 {
						r.StartTimestamp = time.UnixMilli(d.StartTimestamp).UTC().Format("2006-01-02T15:04:05.000Z07:00")
					}
					for _, tp := range d.Topics.Sorted() {
						for _, p := range tp.Partitions {
							r.Partitions = append(r.Partitions, fmt.Sprintf("%s-%d", tp.Topic, p))
						}
					}
					rows = append(rows, r)
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), rows)
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "TRANSACTIONAL ID\tSTATE\tPRODUCER ID\tEPOCH\tTIMEOUT\tSTARTED\tPARTITIONS")
				for _, r := range rows {
					started := r.StartTimestamp
					if started == "" {
						started = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.TransactionalID, r.State, r.ProducerID, r.ProducerEpoch,
						time.Duration(r.TimeoutMs)*time.Millisecond, started, strings.Join(r.Partitions, ","))
				}
				return tw.Flush()
			})
		},
	}
}

// newTxnAbortCmd aborts a hanging transaction on one partition, as
// kafka-transactions.sh abort does (KIP-664): the producer whose open
// transaction starts at --start-offset (DescribeProducers names it) gets
// an abort marker written by the partition's leader. For a transaction its
// coordinator knows, prefer letting it time out or fencing its id.
func newTxnAbortCmd(o *clientOptions) *cobra.Command {
	var topic string
	var partition int32
	var start int64
	cmd := &cobra.Command{
		Use:   "abort --topic T --partition P --start-offset O",
		Short: "Abort a hanging transaction on a partition (write an abort marker)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" || partition < 0 || start < 0 {
				return usageErr("--topic, --partition and --start-offset are required (\"strand txn describe\" or DescribeProducers show a transaction's start offset)")
			}
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {partition: {}}})
				if err != nil {
					return fmt.Errorf("describe producers of %s-%d: %w", topic, partition, err)
				}
				var found []kadm.DescribedProducer
				described.EachProducer(func(p kadm.DescribedProducer) {
					if p.Topic == topic && p.Partition == partition && p.CurrentTxnStartOffset == start {
						found = append(found, p)
					}
				})
				if len(found) == 0 {
					return fmt.Errorf("no open transaction starts at offset %d of %s-%d — \"strand txn describe\" lists a transaction's partitions", start, topic, partition)
				}
				p := found[0]
				resp, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
					Commit: false, CoordinatorEpoch: p.CoordinatorEpoch, Topics: kadm.TopicsSet{topic: {partition: {}}}})
				if err != nil {
					return fmt.Errorf("write the abort marker: %w", err)
				}
				var errs []error
				for _, r := range resp {
					for _, t := range r.Topics {
						for _, pr := range t.Partitions {
							if pr.Err != nil {
								errs = append(errs, fmt.Errorf("%s-%d: %w", t.Topic, pr.Partition, pr.Err))
							}
						}
					}
				}
				if err := errors.Join(errs...); err != nil {
					return fmt.Errorf("write the abort marker: %w", err)
				}
				out := map[string]any{"topic": topic, "partition": partition, "producer_id": p.ProducerID, "producer_epoch": p.ProducerEpoch, "start_offset": start, "aborted": true}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), out)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "aborted producer %d's transaction on %s-%d (started at offset %d)\n", p.ProducerID, topic, partition, start)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the partition's topic")
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition")
	cmd.Flags().Int64Var(&start, "start-offset", -1, "the first offset of the hanging transaction")
	return cmd
}
