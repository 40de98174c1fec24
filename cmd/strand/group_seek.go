package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// seekRow is one partition moved by "strand group seek".
type seekRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// From is the committed offset before the seek (-1: none).
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

func newGroupSeekCmd(o *clientOptions) *cobra.Command {
	var (
		topics     []string
		partitions []int32
		earliest   bool
		latest     bool
		offset     int64
		datetime   string
		dryRun     bool
	)
	cmd := &cobra.Command{
		Use:   "seek GROUP (--to-earliest | --to-latest | --to-offset N | --to-datetime TIME)",
		Short: "Move a group's committed offsets (replay = seek); refused while the group has live members",
		Long: `Move a group's committed offsets, like kafka-consumer-groups --reset-offsets.

Seeking back replays: the group's consumers re-read from the new offsets, and
its lag jumps back up. The group must have no live members (stop its
consumers first): a live consumer owns its positions and would overwrite
the new offsets with its next commit.

Without --topic, every topic the group has committed offsets for is moved.

A share group (KIP-932) is moved the same way: its share-partitions' start
offsets are set (AlterShareGroupOffsets) and the state of their in-flight
records forgotten, so the group delivers everything from there again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			n := 0
			for _, set := range []bool{earliest, latest, cmd.Flags().Changed("to-offset"), datetime != ""} {
				if set {
					n++
				}
			}
			if n != 1 {
				return usageErr("seek: give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime")
			}
			if cmd.Flags().Changed("to-offset") && offset < 0 {
				return usageErr("--to-offset %d: an offset is at least 0", offset)
			}
			var millis int64
			if datetime != "" {
				ts, err := time.Parse(time.RFC3339, datetime)
				if err != nil {
					return usageErr("--to-datetime %q: want RFC 3339, e.g. 2026-01-02T15:04:05Z", datetime)
				}
				millis = ts.UnixMilli()
			}
			if len(partitions) > 0 && len(topics) != 1 {
				return usageErr("--partition needs exactly one --topic")
			}
			group := args[0]
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, _ bool) error {

				described, err := adm.DescribeGroups(ctx, group)
				if err != nil {
					return fmt.Errorf("describe group %q: %w", group, err)
				}
				if d := described[group]; errors.Is(d.Err, kerr.GroupIDNotFound) {
					// DescribeGroups v6: unknown, or a consumer-protocol
					// group, whose members must be gone too.
					cds, err := adm.DescribeConsumerGroups(ctx, group)
					if err != nil {
						return fmt.Errorf("describe consumer group %q: %w", group, err)
					}
					if cd := cds[group]; cd.Err == nil && len(cd.Members) > 0 {
						return fmt.Errorf("group %q has %d live member(s) (state %s): stop its consumers before seeking — "+
							"a live consumer owns its positions and would overwrite the new offsets", group, len(cd.Members), cd.State)
					}
				} else if d.Err != nil {
					return fmt.Errorf("describe group %q: %w", group, d.Err)
				} else if len(d.Members) > 0 || (d.State != "Empty" && d.State != "Dead") {
					return fmt.Errorf("group %q has %d live member(s) (state %s): stop its consumers before seeking — "+
						"a live consumer owns its positions and would overwrite the new offsets", group, len(d.Members), d.State)
				}
				shareGroup, err := emptyShareGroup(ctx, adm, group)
				if err != nil {
					return err
				}
				var current kadm.OffsetResponses
				if shareGroup {
					current, err = shareStartOffsets(ctx, adm, group)
				} else {
					current, err = adm.FetchOffsets(ctx, group)
				}
				if err != nil {
					return fmt.Errorf("fetch offsets of group %q: %w", group, err)
				}
				if err := current.Error(); err != nil {
					return fmt.Errorf("fetch offsets of group %q: %w", group, err)
				}
				if len(topics) == 0 {
					for t := range current {
						topics = append(topics, t)
					}
					slices.Sort(topics)
					if len(topics) == 0 {
						return fmt.Errorf("group %q has no committed offsets: name the topics with --topic", group)
					}
				}
				var listed kadm.ListedOffsets
				switch {
				case earliest, cmd.Flags().Changed("to-offset"):
					listed, err = adm.ListStartOffsets(ctx, topics...)
				case latest:
					listed, err = adm.ListEndOffsets(ctx, topics...)
				default:
					listed, err = adm.ListOffsetsAfterMilli(ctx, millis, topics...)
				}
				if err != nil {
					return fmt.Errorf("list offsets: %w", err)
				}
				if err := listed.Error(); err != nil {
					var missing string
					listed.Each(func(o kadm.ListedOffset) {
						if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
							missing = o.Topic
						}
					})
					if missing != "" {
						return errNoTopic(missing)
					}
					return fmt.Errorf("list offsets: %w", err)
				}
				var ends kadm.ListedOffsets
				if cmd.Flags().Changed("to-offset") {
					if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil {
						return fmt.Errorf("list end offsets: %w", err)
					}
				}
				var rows []seekRow
				to := kadm.Offsets{}
				for _, t := range topics {
					ps, ok := listed[t]
					if !ok {
						return fmt.Errorf("topic %q does not exist", t)
					}
					for p, lo := range ps {
						if len(partitions) > 0 && !slices.Contains(partitions, p) {
							continue
						}
						target := lo.Offset
						if cmd.Flags().Changed("to-offset") {
							// Clamp into [log start, end], as kafka-consumer-groups does.
							end, _ := ends.Lookup(t, p)
							target = min(max(offset, lo.Offset), end.Offset)
						}
						from := int64(-1)
						if c, ok := current.Lookup(t, p); ok {
							from = c.At
						}
						rows = append(rows, seekRow{Topic: t, Partition: p, From: from, To: target})
						to.Add(kadm.Offset{Topic: t, Partition: p, At: target, LeaderEpoch: -1})
					}
				}
				for _, p := range partitions {
					if !slices.ContainsFunc(rows, func(r seekRow) bool { return r.Partition == p }) {
						return fmt.Errorf("topic %q has no partition %d", topics[0], p)
					}
				}
				slices.SortFunc(rows, func(a, b seekRow) int {
					if a.Topic != b.Topic {
						if a.Topic < b.Topic {
							return -1
						}
						return 1
					}
					return int(a.Partition - b.Partition)
				})
				if !dryRun && shareGroup {
					resps, err := adm.AlterShareGroupOffsets(ctx, group, to)
					if err == nil {
						err = firstShareAlterError(resps)
					}
					if err != nil {
						return fmt.Errorf("alter the share group %q's start offsets (did a consumer join meanwhile?): %w", group, err)
					}
				}
				if !dryRun && !shareGroup {
					resps, err := adm.CommitOffsets(ctx, group, to)
					if err != nil {
						return fmt.Errorf("commit offsets of group %q: %w", group, err)
					}
					if err := resps.Error(); err != nil {
						return fmt.Errorf("commit offsets of group %q (did a consumer join meanwhile?): %w", group, err)
					}
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, map[string]any{"group": group, "dry_run": dryRun, "partitions": rows})
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "TOPIC\tPARTITION\tFROM\tTO")
				for _, r := range rows {
					from := strconv.FormatInt(r.From, 10)
					if r.From < 0 {
						from = "-"
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", r.Topic, r.Partition, from, r.To)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if dryRun {
					fmt.Fprintln(w, "(dry run: nothing committed)")
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&topics, "topic", nil, "topics to move (default: every topic the group has committed offsets for)")
	f.Int32SliceVar(&partitions, "partition", nil, "only these partitions (with exactly one --topic)")
	f.BoolVar(&earliest, "to-earliest", false, "seek to each partition's log start offset (replay everything)")
	f.BoolVar(&latest, "to-latest", false, "seek to each partition's end (skip everything)")
	f.Int64Var(&offset, "to-offset", 0, "seek to this offset (clamped into [log start, end])")
	f.StringVar(&datetime, "to-datetime", "", "seek to the first record at or after this RFC 3339 time")
	f.BoolVar(&dryRun, "dry-run", false, "print the new offsets without committing them")
	return cmd
}

// emptyShareGroup reports whether group is a share group, refusing one
// with live members as the other kinds are refused.
func emptyShareGroup(ctx context.Context, adm *kadm.Client, group string) (bool, error) {
	sds, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return false, nil // no share groups here (or none by that id): not one
	}
	sd, ok := sds[group]
	if !ok || sd.Err != nil || sd.GroupState == "Dead" {
		return false, nil
	}
	if len(sd.Members) > 0 {
		return false, fmt.Errorf("share group %q has %d live member(s) (state %s): stop its consumers before seeking", group, len(sd.Members), sd.GroupState)
	}
	return true, nil
}

// shareStartOffsets are a share group's start offsets, shaped as committed
// offsets (DescribeShareGroupOffsets; -1 where the group has no state).
func shareStartOffsets(ctx context.Context, adm *kadm.Client, group string) (kadm.OffsetResponses, error) {
	ds, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	d := ds[group]
	if d.Err != nil {
		return nil, d.Err
	}
	out := kadm.OffsetResponses{}
	for t, ps := range d.Offsets {
		for p, o := range ps {
			if o.Err != nil || o.StartOffset < 0 {
				continue
			}
			if out[t] == nil {
				out[t] = map[int32]kadm.OffsetResponse{}
			}
			out[t][p] = kadm.OffsetResponse{Offset: kadm.Offset{Topic: t, Partition: p, At: o.StartOffset, LeaderEpoch: -1}}
		}
	}
	return out, nil
}

func firstShareAlterError(rs kadm.AlterShareGroupOffsetsResponses) error {
	for _, ps := range rs {
		for _, err := range ps {
			if err != nil {
				return err
			}
		}
	}
	return nil
}
