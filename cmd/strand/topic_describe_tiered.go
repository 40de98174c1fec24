package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// earliestLocalTimestamp is ListOffsets' EARLIEST_LOCAL_TIMESTAMP (KIP-1005):
// the first offset on the leader's disk, above what the object store holds.
const earliestLocalTimestamp = -4

// latestTieredTimestamp is ListOffsets' LATEST_TIERED_TIMESTAMP (KIP-1005):
// the highest offset in the object store, -1 when it holds none.
const latestTieredTimestamp = -5

// addLocalStarts fills in the local log start of each partition of a topic
// with remote.storage.enable=true (tiered storage): START is then where the
// object store's data begins, LOCAL START where the leader's disk's does.
// A failure leaves the column out. It fills in the rest of the tier's
// columns too (addTierDetails).
func addLocalStarts(ctx context.Context, adm *kadm.Client, d *topicDescription, rcs kadm.ResourceConfigs, console string) {
	rc, err := rcs.On(d.Topic, nil)
	if err != nil {
		return
	}
	tiered := false
	for _, c := range rc.Configs {
		if c.Key == "remote.storage.enable" && c.MaybeValue() == "true" {
			tiered = true
		}
	}
	if !tiered {
		return
	}
	locals, err := adm.ListOffsetsAfterMilli(ctx, earliestLocalTimestamp, d.Topic)
	if err != nil {
		return
	}
	for i, p := range d.Partitions {
		if o, ok := locals.Lookup(d.Topic, p.Partition); ok && o.Err == nil {
			off := o.Offset
			d.Partitions[i].LocalStartOffset = &off
		}
	}
	addTierDetails(ctx, adm, d, console)
}

// addTierDetails fills in, for each partition of a tiered topic, where the
// object store's data ends (ListOffsets -5), the bytes on the leader's
// disk (DescribeLogDirs, as kafka-log-dirs.sh shows them) and the bytes in
// the object store, which no Kafka API carries: those come from the
// console's JSON API of the leader's node when console (its
// --console-listen) answers, and stay unknown otherwise.
func addTierDetails(ctx context.Context, adm *kadm.Client, d *topicDescription, console string) {
	if tiered, err := adm.ListOffsetsAfterMilli(ctx, latestTieredTimestamp, d.Topic); err == nil {
		for i, p := range d.Partitions {
			if o, ok := tiered.Lookup(d.Topic, p.Partition); ok && o.Err == nil {
				end := o.Offset + 1 // -1 (none) becomes 0: nothing below 0 is remote
				d.Partitions[i].RemoteEndOffset = &end
			}
		}
	}
	set := kadm.TopicsSet{}
	for _, p := range d.Partitions {
		set.Add(d.Topic, p.Partition)
	}
	if dirs, err := adm.DescribeAllLogDirs(ctx, set); err == nil {
		for i, p := range d.Partitions {
			for _, dir := range dirs[p.Leader] {
				if part, ok := dir.Topics[d.Topic][p.Partition]; ok && dir.Err == nil {
					size := part.Size
					d.Partitions[i].LocalBytes = &size
				}
			}
		}
	}
	if console == "" {
		return
	}
	remote, err := consoleRemoteBytes(ctx, console, d.Topic)
	if err != nil {
		return
	}
	for i, p := range d.Partitions {
		if n, ok := remote[p.Partition]; ok {
			d.Partitions[i].RemoteBytes = &n
		}
	}
}

// consoleRemoteBytes reads the remote bytes of each partition of topic from
// the console's /api/v1/topics/{topic} (the partitions its node holds).
func consoleRemoteBytes(ctx context.Context, console, topic string) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	u := "http://" + console + "/api/v1/topics/" + url.PathEscape(topic)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s from %s", resp.Status, u)
	}
	var body struct {
		Partitions []struct {
			Partition int32 `json:"partition"`
			Tier      *struct {
				RemoteBytes int64 `json:"remote_bytes"`
			} `json:"tier"`
		} `json:"partitions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, p := range body.Partitions {
		if p.Tier != nil {
			out[p.Partition] = p.Tier.RemoteBytes
		}
	}
	return out, nil
}

// localStartCell is the tier's cells of a row (each with a leading tab):
// LOCAL START, LOCAL BYTES, REMOTE END and REMOTE BYTES; "" when no
// partition of the topic is tiered.
func localStartCell(d topicDescription, p *partitionOffsets) string {
	tiered := false
	for _, q := range d.Partitions {
		tiered = tiered || q.LocalStartOffset != nil
	}
	switch {
	case !tiered:
		return ""
	case p == nil:
		return "\tLOCAL START\tLOCAL BYTES\tREMOTE END\tREMOTE BYTES"
	}
	cell := func(v *int64, f func(int64) string) string {
		if v == nil {
			return "\t?"
		}
		return "\t" + f(*v)
	}
	return cell(p.LocalStartOffset, known) + cell(p.LocalBytes, byteSize) + cell(p.RemoteEndOffset, known) + cell(p.RemoteBytes, byteSize)
}

// byteSize is n bytes for a person: 512 B, 8.0 MiB, 1.2 GiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
