package main

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
)

// earliestLocalTimestamp is ListOffsets' EARLIEST_LOCAL_TIMESTAMP (KIP-1005):
// the first offset on the leader's disk, above what the object store holds.
const earliestLocalTimestamp = -4

// addLocalStarts fills in the local log start of each partition of a topic
// with remote.storage.enable=true (tiered storage): START is then where the
// object store's data begins, LOCAL START where the leader's disk's does.
// A failure leaves the column out.
func addLocalStarts(ctx context.Context, adm *kadm.Client, d *topicDescription, rcs kadm.ResourceConfigs) {
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
}

// localStartCell is the LOCAL START cell of a row (with a leading tab), ""
// when no partition of the topic is tiered.
func localStartCell(d topicDescription, p *partitionOffsets) string {
	tiered := false
	for _, q := range d.Partitions {
		tiered = tiered || q.LocalStartOffset != nil
	}
	switch {
	case !tiered:
		return ""
	case p == nil:
		return "\tLOCAL START"
	case p.LocalStartOffset == nil:
		return "\t?"
	}
	return "\t" + known(*p.LocalStartOffset)
}
