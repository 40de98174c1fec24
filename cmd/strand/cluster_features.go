package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// featureInfo is one feature as "strand cluster features" shows it: the
// finalized level and the range each live node supports.
type featureInfo struct {
	Name      string             `json:"name"`
	Finalized int16              `json:"finalized"`
	Nodes     map[int32][2]int16 `json:"supported_by_node"` // node → [min, max]
	Upgrade   int16              `json:"can_finalize_up_to"`
	nodeOrder []int32
}

// newFeaturesCmd is "strand cluster features": show the feature levels
// (Kafka's kafka-features.sh describe) and finalize higher ones
// (UpdateFeatures) once every node runs a build that supports them.
func newFeaturesCmd(o *clientOptions) *cobra.Command {
	var (
		upgrades []string
		latest   bool
		dryRun   bool
	)
	cmd := &cobra.Command{
		Use:   "features",
		Short: "Show the cluster's feature levels (metadata.version) and finalize new ones after an upgrade",
		Long: `Show each feature's finalized level and the levels each live node's build
supports. metadata.version versions the metadata log and the protocol between
nodes: during a rolling upgrade new nodes keep writing only what the finalized
level allows, so old and new builds run side by side. Once every node runs the
new build, finalize (--latest, or --upgrade metadata.version=N) to use what
it adds. A finalized level is never lowered: downgrade the build only while
the old level is still finalized.`,
		Example: `  strand cluster features
  strand cluster features --latest --dry-run
  strand cluster features --upgrade metadata.version=2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
				infos, err := describeFeatures(ctx, cl)
				if err != nil {
					return err
				}
				want, err := featureTargets(infos, upgrades, latest)
				if err != nil {
					return err
				}
				if len(want) > 0 {
					w := cmd.OutOrStdout()
					if asJSON {
						w = cmd.ErrOrStderr() // stdout is the JSON
					}
					if err := finalizeFeatures(ctx, w, cl, want, dryRun); err != nil {
						return err
					}
					if dryRun {
						return nil
					}
					if infos, err = describeFeatures(ctx, cl); err != nil {
						return err
					}
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), infos)
				}
				return printFeatures(cmd, infos)
			})
		},
	}
	cmd.Flags().StringArrayVar(&upgrades, "upgrade", nil, "finalize NAME=LEVEL (repeatable)")
	cmd.Flags().BoolVar(&latest, "latest", false, "finalize every feature at the highest level all live nodes support")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check the upgrade with the controller without finalizing it")
	return cmd
}

// describeFeatures asks every live broker for its ApiVersions: the
// finalized levels are the cluster's, the supported ranges each build's.
func describeFeatures(ctx context.Context, cl *kgo.Client) ([]featureInfo, error) {
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("features: metadata: %w", err)
	}
	byName := map[string]*featureInfo{}
	var epoch int64 = -1
	for _, b := range meta.Brokers {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "strand-cli", "1"
		resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
		if err != nil {
			return nil, fmt.Errorf("features: node %d: %w", b.NodeID, err)
		}
		for _, f := range resp.SupportedFeatures {
			fi := byName[f.Name]
			if fi == nil {
				fi = &featureInfo{Name: f.Name, Nodes: map[int32][2]int16{}}
				byName[f.Name] = fi
			}
			fi.Nodes[b.NodeID] = [2]int16{f.MinVersion, f.MaxVersion}
			fi.nodeOrder = append(fi.nodeOrder, b.NodeID)
		}
		// The node with the newest metadata knows the finalized levels.
		if resp.FinalizedFeaturesEpoch >= epoch {
			epoch = resp.FinalizedFeaturesEpoch
			for _, f := range resp.FinalizedFeatures {
				if fi := byName[f.Name]; fi != nil {
					fi.Finalized = f.MaxVersionLevel
				}
			}
		}
	}
	infos := make([]featureInfo, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		fi := byName[name]
		fi.Upgrade = fi.Finalized
		first := true
		for _, r := range fi.Nodes {
			if first || r[1] < fi.Upgrade {
				fi.Upgrade = r[1]
			}
			first = false
		}
		slices.Sort(fi.nodeOrder)
		infos = append(infos, *fi)
	}
	return infos, nil
}

// featureTargets turns --upgrade and --latest into the levels to finalize.
func featureTargets(infos []featureInfo, upgrades []string, latest bool) (map[string]int16, error) {
	want := map[string]int16{}
	for _, u := range upgrades {
		name, lvl, ok := strings.Cut(u, "=")
		l, err := strconv.ParseInt(lvl, 10, 16)
		if !ok || err != nil || name == "" {
			return nil, usageErr("--upgrade %q: want NAME=LEVEL, e.g. metadata.version=2", u)
		}
		want[name] = int16(l)
	}
	if latest {
		for _, fi := range infos {
			if _, named := want[fi.Name]; !named && fi.Upgrade > fi.Finalized {
				want[fi.Name] = fi.Upgrade
			}
		}
	}
	return want, nil
}

func finalizeFeatures(ctx context.Context, w io.Writer, cl *kgo.Client, want map[string]int16, dryRun bool) error {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis, req.ValidateOnly = 30000, dryRun
	for _, name := range slices.Sorted(maps.Keys(want)) {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, want[name], 1
		req.FeatureUpdates = append(req.FeatureUpdates, u)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("features: update: %w", err)
	}
	if resp.ErrorCode != 0 {
		return featureErr("", resp.ErrorCode, resp.ErrorMessage)
	}
	results := resp.Results
	if resp.Version >= 2 { // one answer for all: success here
		for _, name := range slices.Sorted(maps.Keys(want)) {
			results = append(results, kmsg.UpdateFeaturesResponseResult{Feature: name})
		}
	}
	var errs []error
	for _, r := range results {
		if r.ErrorCode != 0 {
			errs = append(errs, featureErr(r.Feature, r.ErrorCode, r.ErrorMessage))
			continue
		}
		verb := "finalized"
		if dryRun {
			verb = "can be finalized"
		}
		fmt.Fprintf(w, "%s %s at %d\n", r.Feature, verb, want[r.Feature])
	}
	return errors.Join(errs...)
}

func featureErr(name string, code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" {
		err = fmt.Errorf("%s (%w)", strings.TrimPrefix(*msg, "cluster: "), err)
	}
	if name != "" {
		err = fmt.Errorf("%s: %w", name, err)
	}
	return fmt.Errorf("features: %w", err)
}

func printFeatures(cmd *cobra.Command, infos []featureInfo) error {
	tw := newTable(cmd.OutOrStdout())
	fmt.Fprintln(tw, "FEATURE\tFINALIZED\tCAN FINALIZE UP TO\tSUPPORTED BY NODE")
	for _, fi := range infos {
		var nodes []string
		for _, id := range fi.nodeOrder {
			r := fi.Nodes[id]
			nodes = append(nodes, fmt.Sprintf("%d:%d-%d", id, r[0], r[1]))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", fi.Name, fi.Finalized, fi.Upgrade, strings.Join(nodes, " "))
	}
	return tw.Flush()
}
