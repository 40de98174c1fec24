package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeShareLong is --share-group's part of consume's help.
const consumeShareLong = `

With --share-group, consume is a member of that share group (KIP-932, a work
queue): the broker hands it records that no other member holds, and each
printed record is acknowledged — accepted, or with --reject-matching TEXT
rejected when its value contains TEXT, which sends it to the group's
dead-letter topic (the group config errors.deadletterqueue.topic.name) with
the reason. --from, --to and --partition do not apply: the group decides
what comes next. Without --follow, consume stops once nothing has arrived
for --idle-timeout.`

// runShare is consume as a share-group member.
func (o *consumeOptions) runShare(ctx context.Context, stdout io.Writer, topic string, format *recordFormat, enc encoding) error {
	if o.group != "" || len(o.partitions) > 0 || o.to != "" {
		return usageErr("--share-group excludes --group, --partition and --to: the share group decides what each member reads")
	}
	cl, err := o.client.client(ctx, kgo.ShareGroup(o.shareGroup), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close() // leaves the group; acknowledgements not yet sent go with it
	w := bufio.NewWriterSize(stdout, 64<<10)
	n := 0
	var buf []byte
	for o.count == 0 || n < o.count {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if !o.follow {
			pctx, cancel = context.WithTimeout(ctx, o.idle)
		}
		fetches := cl.PollFetches(pctx)
		idle := pctx.Err() != nil
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			break
		}
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return fmt.Errorf("share fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		recs := fetches.Records()
		if len(recs) == 0 && idle {
			break
		}
		for _, r := range recs {
			if o.count > 0 && n >= o.count {
				r.Ack(kgo.AckRelease) // not printed: another member may have it
				continue
			}
			buf = buf[:0]
			if format == nil {
				buf = appendJSONRecord(buf, r, enc)
			} else {
				buf = format.append(buf, r)
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
			if o.rejectMatching != "" && bytes.Contains(r.Value, []byte(o.rejectMatching)) {
				r.Ack(kgo.AckReject)
			} else {
				r.Ack(kgo.AckAccept)
			}
			n++
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("acknowledge: %w", err)
		}
	}
	return w.Flush()
}
