package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type consumeOptions struct {
	client     clientOptions
	from       string
	to         string
	encoding   string
	group      string
	format     string
	count      int
	follow     bool
	partitions []int32
	idle       time.Duration
	bounds     map[int32]int64 // with --to: each partition's end, exclusive
	progress   string
	printed    atomic.Int64 // records printed so far, for the progress line
	decode     bool
	registry   registryOptions
	decoder    *schemaDecoder // with --decode
	isolation  string
	protocol   string // --group-protocol
	// shareGroup and rejectMatching: --share-group, --reject-matching
	// (consume_share.go).
	shareGroup     string
	rejectMatching string
}

const consumeLong = `Print a topic's records, one per --format line, from --from on.

Without --follow, consume stops once it reaches the end offsets (high
watermarks) the partitions had when it started; with --follow it waits for
new records until interrupted. --count stops after that many records.

--from is earliest (the default), latest, an offset (applied to every
partition; clamped to what the log holds), -N (the last N records of each
partition), @<unix-ms> or an RFC 3339 time (the first record at or after
that time). --to stops each partition before an offset, or before the
first record at or after a time (@<unix-ms> or RFC 3339); --to end (the
default without --follow) stops at the end offsets the partitions had at
the start. With --follow, --to waits for its bound.

With --group, consume joins that consumer group: it reads only the partitions
the group assigns it, starts at the group's committed offsets (--from applies
to partitions without one), and commits what it printed. --group-protocol
consumer joins it with the KIP-848 protocol (the broker assigns partitions,
with its uniform or range assignor, and hands them over incrementally);
classic, the default, with the JoinGroup/SyncGroup protocol and a
cooperative-sticky assignment made by the group's leader.

--format is like kcat's -f: %t topic, %p partition, %o offset, %k key,
%s value, %K / %S key / value length, %h headers (k=v,k=v), %T timestamp
(ms), %% a percent sign, and \n \t escapes. --output json prints one JSON
object per record instead, in the shape of the console's /api/v1:
snake_case names, "timestamp" in RFC 3339 (UTC, milliseconds) with
"timestamp_ms" beside it, "headers" as a list of {"key", "value"}, a missing
key or value as null, and a key, value or header value that is not UTF-8
text as base64 with a key_encoding, value_encoding or header "encoding"
field saying so. --encoding hex or base64 prints every key, value and header
value that way, in --format and JSON alike.

On a terminal, consume ends with a summary on stderr (records, partitions,
time, and why it stopped), and while records go to a file or a pipe it
shows a progress line there; --progress always or never overrides.`

func newConsumeCmd() *cobra.Command {
	o := &consumeOptions{}
	cmd := &cobra.Command{
		Use:   "consume <topic>",
		Short: "Print a topic's records",
		Long:  consumeLong + consumeShareLong,
		Example: `  strand consume demo
  strand consume demo --from @1767225600000 --format '%p %o %k=%s\n'
  strand consume demo --group audit --follow`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return o.run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
		},
	}
	addClientFlags(cmd, &o.client, false, true)
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "earliest", "earliest, latest, <offset>, -<N>, @<unix-ms> or an RFC 3339 time")
	f.StringVar(&o.encoding, "encoding", "raw", "how keys, values and header values are printed: raw, hex or base64 (JSON prints bytes that are not UTF-8 as base64 and says so)")
	f.StringVar(&o.to, "to", "", "stop before this offset or time (@<unix-ms>, RFC 3339), or at the end offsets of the start (end)")
	f.StringVarP(&o.group, "group", "g", "", "consume as a member of this consumer group, committing offsets")
	f.StringVar(&o.shareGroup, "share-group", "", "consume as a member of this share group (KIP-932), acknowledging each printed record")
	f.StringVar(&o.rejectMatching, "reject-matching", "", "with --share-group: reject (dead-letter) records whose value contains this text")
	f.StringVar(&o.protocol, "group-protocol", "classic", "with --group: classic (JoinGroup/SyncGroup, client-side assignment) or consumer (KIP-848, server-side assignment; Kafka's group.protocol)")
	f.StringVarP(&o.format, "format", "f", `%s\n`, "output format, like kcat -f")
	f.IntVarP(&o.count, "count", "c", 0, "stop after this many records (0: no limit)")
	f.BoolVar(&o.follow, "follow", false, "keep waiting for new records instead of stopping at the end")
	f.Int32SliceVarP(&o.partitions, "partition", "p", nil, "consume only these partitions (not with --group)")
	f.DurationVar(&o.idle, "idle-timeout", 10*time.Second, "without --follow, stop if no record arrives for this long before the end is reached")
	f.BoolVar(&o.decode, "decode", false, "print Confluent wire-format keys and values (Avro, Protobuf, JSON Schema) decoded to JSON, with their schemas from --registry")
	f.StringVar(&o.registry.url, "registry", registryDefault(), "schema registry URL for --decode (env STRAND_SCHEMA_REGISTRY)")
	o.registry.addAuthFlags(f)
	f.StringVar(&o.isolation, "isolation", "read_uncommitted", "read_uncommitted (every record) or read_committed (only committed transactions' records, up to the last stable offset)")
	f.StringVar(&o.progress, "progress", "auto", "a progress line and a closing summary on stderr: auto (when stderr is a terminal), always or never")
	return cmd
}

// startPoint is a parsed --from.
type startPoint struct {
	kind  string // "earliest", "latest", "offset", "last", "time"
	value int64
}

func parseFrom(s string) (startPoint, error) {
	switch s {
	case "earliest", "beginning", "start":
		return startPoint{kind: "earliest"}, nil
	case "latest", "end":
		return startPoint{kind: "latest"}, nil
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		v, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || v < 0 {
			return startPoint{}, usageErr("--from %q: want @<unix milliseconds>", s)
		}
		return startPoint{kind: "time", value: v}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return startPoint{kind: "time", value: t.UnixMilli()}, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return startPoint{}, usageErr("--from %q: want earliest, latest, <offset>, -<N> or @<unix-ms>", s)
	}
	if v < 0 {
		return startPoint{kind: "last", value: -v}, nil
	}
	return startPoint{kind: "offset", value: v}, nil
}

// resetOffset is the kgo offset a group member uses for partitions without
// a committed offset.
func (sp startPoint) resetOffset() kgo.Offset {
	switch sp.kind {
	case "latest":
		return kgo.NewOffset().AtEnd()
	case "offset":
		return kgo.NewOffset().At(sp.value)
	case "last":
		return kgo.NewOffset().AtEnd().Relative(-sp.value)
	case "time":
		return kgo.NewOffset().AfterMilli(sp.value)
	}
	return kgo.NewOffset().AtStart()
}

func (o *consumeOptions) run(ctx context.Context, stdout, stderr io.Writer, topic string) error {
	sp, err := parseFrom(o.from)
	if err != nil {
		return err
	}
	showSummary, showBar, err := o.reporting(stdout, stderr)
	if err != nil {
		return err
	}
	asJSON, err := o.client.json()
	if err != nil {
		return err
	}
	enc, err := parseEncoding(o.encoding)
	if err != nil {
		return err
	}
	var format *recordFormat
	if !asJSON {
		if format, err = parseRecordFormat(o.format); err != nil {
			return err
		}
		format.enc = enc
	}
	if o.decode {
		o.registry.timeout = o.client.timeout
		if o.decoder, err = newSchemaDecoder(&o.registry); err != nil {
			return err
		}
	}
	if o.shareGroup != "" {
		return o.runShare(ctx, stdout, topic, format, enc)
	}
	if o.group != "" && len(o.partitions) > 0 {
		return usageErr("--partition and --group exclude each other: the group assigns partitions")
	}
	switch o.protocol {
	case "classic", "consumer":
	default:
		return usageErr("--group-protocol: want classic or consumer (KIP-848), got %q", o.protocol)
	}
	to, err := parseTo(o.to)
	if err != nil {
		return err
	}
	starts, ends, err := o.plan(ctx, topic, sp, to)
	if err != nil {
		return err
	}
	// pending: partitions still short of their end offset.
	pending := map[int32]int64{}
	for p, s := range starts {
		if s < ends[p] {
			pending[p] = ends[p]
		}
	}
	o.bounds = nil
	if to.kind != "" {
		o.bounds = maps.Clone(ends)
	}
	if (!o.follow || o.bounds != nil) && len(pending) == 0 {
		return nil // nothing to read
	}

	// Control records (transaction markers) are kept so that the loop sees
	// the offsets they take: the end of a transactional partition is a
	// marker, never printed.
	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond), kgo.KeepControlRecords()}
	if o.isolation == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if o.group != "" {
		opts = append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(sp.resetOffset()), kgo.AutoCommitMarks())
		if o.protocol == "consumer" {
			// franz-go speaks KIP-848 when asked and its first balancer is
			// a sticky or range one (the server assigns; the balancer is
			// only its fallback against a broker without the protocol).
			opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
		}
	} else {
		offsets := make(map[int32]kgo.Offset, len(starts))
		for p, s := range starts {
			offsets[p] = kgo.NewOffset().At(s)
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	}
	cl, err := o.client.client(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	w := bufio.NewWriterSize(stdout, 64<<10)
	var bar *progress
	if showBar {
		total := int64(0)
		if !o.follow || o.bounds != nil {
			for p, end := range pending {
				total += end - starts[p]
			}
		}
		bar = startProgress(stderr, total, o.printed.Load, o.printed.Load)
	}
	began := time.Now()
	why, loopErr := o.loop(ctx, cl, w, format, enc, pending)
	bar.finish()
	flushErr := w.Flush()
	if showSummary && loopErr == nil {
		fmt.Fprintln(stderr, o.summary(why, len(starts), time.Since(began), pending))
	}
	var commitErr error
	if o.group != "" {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.client.timeout)
		defer cancel()
		if err := cl.CommitMarkedOffsets(cctx); err != nil {
			commitErr = fmt.Errorf("commit offsets of group %q: %w", o.group, err)
		}
	}
	return errors.Join(loopErr, flushErr, commitErr)
}

// Why consume stopped, for the summary.
const (
	stopEnd         = "reached the end"
	stopCount       = "stopped at --count"
	stopInterrupted = "interrupted"
	stopIdle        = "idle"
)

// loop polls and prints until the end, --count, the idle timeout or an
// interrupt, and says which.
func (o *consumeOptions) loop(ctx context.Context, cl *kgo.Client, w *bufio.Writer,
	format *recordFormat, enc encoding, pending map[int32]int64) (string, error) {
	var (
		n   int
		buf []byte
	)
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if !o.follow {
			pctx, cancel = context.WithTimeout(ctx, o.idle)
		}
		max := -1
		if o.count > 0 {
			max = o.count - n
		}
		fetches := cl.PollRecords(pctx, max)
		idle := pctx.Err() != nil
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return stopInterrupted, nil // what was printed is committed by the caller
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			return "", fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		recs := fetches.Records()
		if len(recs) == 0 && idle {
			return stopIdle, nil // nothing arrived for --idle-timeout: the end is a gap
		}
		for _, r := range recs {
			if end, ok := o.bounds[r.Partition]; ok && r.Offset >= end {
				continue // past --to
			}
			if r.Attrs.IsControl() {
				if end, ok := pending[r.Partition]; ok && r.Offset+1 >= end {
					delete(pending, r.Partition)
				}
				continue
			}
			if o.decoder != nil {
				if err := o.decodeRecord(ctx, r); err != nil {
					return "", err
				}
			}
			buf = buf[:0]
			if format == nil {
				buf = appendJSONRecord(buf, r, enc)
			} else {
				buf = format.append(buf, r)
			}
			if _, err := w.Write(buf); err != nil {
				return "", err
			}
			if o.group != "" {
				cl.MarkCommitRecords(r)
			}
			if end, ok := pending[r.Partition]; ok && r.Offset+1 >= end {
				delete(pending, r.Partition)
			}
			n++
			o.printed.Add(1)
		}
		if err := w.Flush(); err != nil {
			return "", err
		}
		if o.count > 0 && n >= o.count {
			return stopCount, nil
		}
		if (!o.follow || o.bounds != nil) && len(pending) == 0 {
			return stopEnd, nil
		}
	}
}

// reporting decides, from --progress and where stdout and stderr go,
// whether to print the closing summary and the progress line: the summary
// when stderr is a terminal, the line only when records do not go to it too.
func (o *consumeOptions) reporting(stdout, stderr io.Writer) (summary, bar bool, err error) {
	term := func(w io.Writer) bool {
		f, ok := w.(*os.File)
		return ok && isTerminal(f)
	}
	switch o.progress {
	case "always":
		return true, true, nil
	case "never":
		return false, false, nil
	case "auto":
		return term(stderr), term(stderr) && !term(stdout), nil
	}
	return false, false, usageErr("--progress %q: want auto, always or never", o.progress)
}

// summary is the closing line: how much was read, from how many
// partitions, how fast, and why it stopped.
func (o *consumeOptions) summary(why string, partitions int, took time.Duration, pending map[int32]int64) string {
	n := o.printed.Load()
	rate := float64(n) / max(took.Seconds(), 1e-3)
	line := fmt.Sprintf("consumed %d records from %d partition(s) in %v (%.0f records/s); %s", n, partitions, took.Round(time.Millisecond), rate, why)
	if why == stopIdle {
		line += fmt.Sprintf(": no record for --idle-timeout %v with %d partition(s) short of their end (records deleted or quarantined leave gaps)", o.idle, len(pending))
	}
	return line
}

// plan resolves --from (or the group's committed offsets) to a start offset
// per partition, and reads each partition's end offset now.
func (o *consumeOptions) plan(ctx context.Context, topic string, sp, to startPoint) (starts, ends map[int32]int64, err error) {
	actx, cancel := o.client.ctx(ctx)
	defer cancel()
	adm, err := o.client.admin(actx)
	if err != nil {
		return nil, nil, err
	}
	defer adm.Close()
	details, err := adm.ListTopics(actx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata: %w", err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return nil, nil, errNoTopic(topic)
	}
	los, err := adm.ListStartOffsets(actx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list start offsets: %w", err)
	}
	listEnds := adm.ListEndOffsets
	switch o.isolation {
	case "read_uncommitted":
	case "read_committed":
		listEnds = adm.ListCommittedOffsets // the last stable offsets
	default:
		return nil, nil, usageErr("--isolation %q: want read_uncommitted or read_committed", o.isolation)
	}
	leo, err := listEnds(actx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list end offsets: %w", err)
	}
	var byTime, toTime kadm.ListedOffsets
	if sp.kind == "time" {
		if byTime, err = adm.ListOffsetsAfterMilli(actx, sp.value, topic); err != nil {
			return nil, nil, fmt.Errorf("list offsets by time: %w", err)
		}
	}
	if to.kind == "time" {
		if toTime, err = adm.ListOffsetsAfterMilli(actx, to.value, topic); err != nil {
			return nil, nil, fmt.Errorf("list offsets by time: %w", err)
		}
	}
	var committed kadm.OffsetResponses
	if o.group != "" {
		if committed, err = adm.FetchOffsets(actx, o.group); err != nil {
			return nil, nil, fmt.Errorf("fetch committed offsets of group %q: %w", o.group, err)
		}
	}
	want := map[int32]bool{}
	for _, p := range o.partitions {
		if _, ok := d.Partitions[p]; !ok {
			return nil, nil, usageErr("topic %q has no partition %d (it has %d)", topic, p, len(d.Partitions))
		}
		want[p] = true
	}
	starts, ends = map[int32]int64{}, map[int32]int64{}
	for _, p := range d.Partitions.Numbers() {
		if len(want) > 0 && !want[p] {
			continue
		}
		lo, _ := los.Lookup(topic, p)
		hi, _ := leo.Lookup(topic, p)
		if lo.Err != nil || hi.Err != nil {
			return nil, nil, fmt.Errorf("list offsets of %s[%d]: %w", topic, p, errors.Join(lo.Err, hi.Err))
		}
		s := startOffset(sp, lo.Offset, hi.Offset, byTime, topic, p)
		if c, ok := committed.Lookup(topic, p); ok && c.Err == nil && c.At >= 0 {
			s = min(max(c.At, lo.Offset), hi.Offset)
		}
		starts[p], ends[p] = s, endOffset(to, o.follow, hi.Offset, toTime, topic, p)
	}
	return starts, ends, nil
}

// parseTo parses --to: "" (none), end, an offset, @<unix-ms> or RFC 3339.
func parseTo(s string) (startPoint, error) {
	switch s {
	case "":
		return startPoint{}, nil
	case "end", "latest":
		return startPoint{kind: "latest"}, nil
	}
	sp, err := parseFrom(s)
	if err != nil || (sp.kind != "offset" && sp.kind != "time") {
		return startPoint{}, usageErr("--to %q: want end, <offset>, @<unix-ms> or an RFC 3339 time", s)
	}
	return sp, nil
}

// endOffset is where a partition's read stops (exclusive): the end offset
// it had at the start (hi), or --to's bound — which --follow may wait for
// past hi, and which is hi without --follow if it lies beyond.
func endOffset(to startPoint, follow bool, hi int64, byTime kadm.ListedOffsets, topic string, p int32) int64 {
	bound := hi
	switch to.kind {
	case "offset":
		bound = to.value
	case "time":
		if t, ok := byTime.Lookup(topic, p); ok && t.Err == nil && t.Offset >= 0 {
			bound = t.Offset
		} else if follow {
			return math.MaxInt64 // nothing at or after that time yet: wait for it
		}
	}
	if !follow {
		bound = min(bound, hi)
	}
	return bound
}

func startOffset(sp startPoint, lo, hi int64, byTime kadm.ListedOffsets, topic string, p int32) int64 {
	switch sp.kind {
	case "latest":
		return hi
	case "offset":
		return min(max(sp.value, lo), hi)
	case "last":
		return max(hi-sp.value, lo)
	case "time":
		if t, ok := byTime.Lookup(topic, p); ok && t.Err == nil && t.Offset >= 0 {
			return min(max(t.Offset, lo), hi)
		}
		return hi // nothing at or after that time
	}
	return lo
}
