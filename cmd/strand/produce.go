package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceSummary is "strand produce -o json": what was written.
type produceSummary struct {
	Topic    string  `json:"topic"`
	Produced int64   `json:"produced"`
	Failed   int64   `json:"failed"`
	Seconds  float64 `json:"seconds"`
}

type produceOptions struct {
	client      clientOptions
	file        string
	separator   string
	delimiter   string
	key, value  string
	headers     []string
	partition   int32
	maxLine     int
	compression string
	acks        string
	maxMessage  int32
	txnID       string
	abort       bool
}

func newProduceCmd() *cobra.Command {
	o := &produceOptions{}
	cmd := &cobra.Command{
		Use:   "produce <topic>",
		Short: "Produce one record per input line (stdin or --file), or one record from --key/--value",
		Long: `Produce one record per line of stdin (or --file). Without --separator each
line is a record's value; with it, "key<sep>value" (a line without the
separator is a value without key). --delimiter ends records with something
other than a newline (kcat's -D), so values may hold newlines. --value (and
--key) produce one record from the command line and read nothing. Keyed
records go to the partition Kafka's partitioner picks (murmur2), unless
--partition says otherwise.

With --transactional-id every record goes into one transaction, committed
once all are acknowledged (or aborted with --abort, or if any failed):
read_committed consumers see all of them or none.

A record may be as large as the topic's max.message.bytes (read from the
broker; --max-message-bytes overrides it).

When the input is not a terminal, a summary ("produced N records in X s")
goes to stderr at the end, with a live progress line while stderr is a
terminal.`,
		Example: `  printf 'k1:hello\nk2:world\n' | strand produce demo -K :
  strand produce demo --file events.txt --header source=import
  strand produce demo -k user-1 -v '{"plan":"pro"}' --acks 1 --compression zstd
  printf 'line one\nline two;second record' | strand produce demo -D ';'
  printf 'a\nb\n' | strand produce demo --transactional-id loader-1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return o.run(ctx, cmd, args[0])
		},
	}
	addClientFlags(cmd, &o.client, false, true)
	f := cmd.Flags()
	f.StringVar(&o.file, "file", "", "read records from this file instead of stdin")
	f.StringVarP(&o.separator, "separator", "K", "", "split each record into key<sep>value at the first <sep>")
	f.StringVarP(&o.delimiter, "delimiter", "D", "\n", "what ends each record of the input (kcat's -D)")
	f.StringVarP(&o.key, "key", "k", "", "with --value: the one record's key")
	f.StringVarP(&o.value, "value", "v", "", "produce one record with this value instead of reading input")
	f.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	f.StringVar(&o.acks, "acks", "all", "acknowledgement to wait for: all (every in-sync replica, idempotent), 1 (the leader) or 0 (none)")
	f.Int32Var(&o.maxMessage, "max-message-bytes", 0, "largest batch to send (default: the topic's max.message.bytes, or 1 MiB for a topic not created yet)")
	f.StringArrayVarP(&o.headers, "header", "H", nil, "add header key=value to every record (repeatable)")
	f.Int32VarP(&o.partition, "partition", "p", -1, "produce every record to this partition")
	f.IntVar(&o.maxLine, "max-line-bytes", 16<<20, "longest input line accepted")
	f.StringVar(&o.txnID, "transactional-id", "", "produce every record in one transaction of this transactional id, committed at the end")
	f.BoolVar(&o.abort, "abort", false, "with --transactional-id: abort the transaction instead of committing it")
	return cmd
}

func (o *produceOptions) run(ctx context.Context, cmd *cobra.Command, topic string) error {
	hdrs, err := parseHeaders(o.headers)
	if err != nil {
		return err
	}
	in, size, interactive, closeIn, err := o.input(cmd)
	if err != nil {
		return err
	}
	defer closeIn()

	opts, err := o.producerOpts(ctx, topic)
	if err != nil {
		return err
	}
	cl, err := o.client.client(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if o.txnID != "" {
		if err := cl.BeginTransaction(); err != nil {
			return fmt.Errorf("begin a transaction: %w", err)
		}
	}

	var (
		records  atomic.Int64
		failMu   sync.Mutex
		firstErr error
		failed   int64
	)
	onDone := func(_ *kgo.Record, err error) {
		if err == nil {
			records.Add(1)
			return
		}
		failMu.Lock()
		failed++
		if firstErr == nil {
			firstErr = err
		}
		failMu.Unlock()
	}
	counter := &countingReader{r: in}
	var bar *progress
	if !interactive && isTerminal(os.Stderr) {
		bar = startProgress(cmd.ErrOrStderr(), size, counter.n.Load, records.Load)
	}
	start := time.Now()
	var readErr error
	if cmd.Flags().Changed("value") {
		rec := &kgo.Record{Topic: topic, Headers: hdrs, Value: []byte(o.value), Partition: o.partition}
		if cmd.Flags().Changed("key") {
			rec.Key = []byte(o.key)
		}
		cl.Produce(ctx, rec, onDone)
	} else {
		readErr = o.produceLines(ctx, cl, counter, topic, hdrs, onDone)
	}
	flushErr := cl.Flush(context.WithoutCancel(ctx))
	aborted := false
	if o.txnID != "" {
		commit := !o.abort && firstErr == nil && flushErr == nil && readErr == nil
		if err := cl.EndTransaction(context.WithoutCancel(ctx), kgo.TransactionEndTry(commit)); err != nil {
			flushErr = errors.Join(flushErr, fmt.Errorf("end the transaction: %w", err))
		} else if !commit && firstErr == nil {
			aborted = true
			// What was written is not produced: none of it will be read
			// committed. One line says so, not a "produced 0 records".
			fmt.Fprintf(cmd.ErrOrStderr(), "aborted the transaction of %q (%s written, none will be read committed)\n", o.txnID, plural(int(records.Swap(0)), "record"))
		}
	}
	bar.finish()
	elapsed := time.Since(start)

	asJSON, err := o.client.json()
	if err != nil {
		return err
	}
	switch n := records.Load(); {
	case asJSON:
		if err := writeJSON(cmd.OutOrStdout(), produceSummary{Topic: topic, Produced: n, Failed: failed, Seconds: elapsed.Seconds()}); err != nil {
			return err
		}
	case aborted: // the abort line said it
	case !interactive && (n > 0 || firstErr == nil): // nothing produced and an error: the error says it all
		fmt.Fprintf(cmd.ErrOrStderr(), "produced %s in %.2f s (%.0f rec/s)\n",
			plural(int(n), "record"), elapsed.Seconds(), float64(n)/max(elapsed.Seconds(), 1e-9))
	}
	if firstErr != nil {
		err := produceError(topic, failed, firstErr, o.maxMessage)
		if errors.Is(firstErr, kgo.ErrRecordTimeout) || errors.Is(firstErr, context.DeadlineExceeded) {
			// kgo retried a retriable error until the timeout and kept no
			// trace of it: say what the cluster shows instead.
			// The cause first, the timeout it led to after: a first line
			// blaming the timeout reads as a slow broker.
			if why := diagnoseTopic(cl, topic); why != "" {
				err = fmt.Errorf("%s not produced: topic %q cannot take them now\n%s\n(gave up when --timeout ran out: %w)", plural(int(failed), "record"), topic, why, firstErr)
			}
		}
		return err
	}
	return errors.Join(readErr, flushErr)
}

// input opens --file or stdin and reports the size when it is known
// (a regular file) and whether it is a terminal.
func (o *produceOptions) input(cmd *cobra.Command) (r io.Reader, size int64, interactive bool, closeFn func(), err error) {
	if o.file != "" && o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return nil, 0, false, nil, usageErr("--file: %v", err)
		}
		var size int64
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
		return f, size, false, func() { f.Close() }, nil
	}
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			if st.Mode().IsRegular() {
				size = st.Size()
			}
			interactive = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return in, size, interactive, func() {}, nil
}

// producerOpts turns the flags into the producer's options; without
// --max-message-bytes it asks the broker for the topic's max.message.bytes
// so that a record the topic allows is never refused here.
func (o *produceOptions) producerOpts(ctx context.Context, topic string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(3)}
	if o.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	codec, ok := codecs[o.compression]
	if !ok {
		return nil, usageErr("--compression %q: want none, gzip, snappy, lz4 or zstd", o.compression)
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	switch o.acks {
	case "all", "-1":
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, usageErr("--acks %q: want all, 1 or 0", o.acks)
	}
	if o.delimiter == "" {
		return nil, usageErr("--delimiter must not be empty")
	}
	switch {
	case o.abort && o.txnID == "":
		return nil, usageErr("--abort needs --transactional-id")
	case o.txnID != "" && o.acks != "all" && o.acks != "-1":
		return nil, usageErr("--transactional-id needs --acks all (transactions are idempotent)")
	case o.txnID != "":
		opts = append(opts, kgo.TransactionalID(o.txnID))
	}
	if o.maxMessage == 0 {
		o.maxMessage = o.topicMaxMessageBytes(ctx, topic)
	}
	if o.maxMessage <= 0 {
		return nil, usageErr("--max-message-bytes %d: want a positive size", o.maxMessage)
	}
	return append(opts, kgo.ProducerBatchMaxBytes(o.maxMessage), kgo.BrokerMaxWriteBytes(max(o.maxMessage+1<<20, 100<<20))), nil
}

// topicMaxMessageBytes is the topic's max.message.bytes, or Kafka's
// default (1 MiB) when the broker does not say (no such topic yet).
func (o *produceOptions) topicMaxMessageBytes(ctx context.Context, topic string) int32 {
	const kafkaDefault = 1048588
	// Bounded by --timeout, and not cut short by a first interrupt: that
	// one lets produce finish what it read (a second exits at once).
	ctx, cancel := o.client.ctx(context.WithoutCancel(ctx))
	defer cancel()
	cl, err := o.client.client(ctx)
	if err != nil {
		return kafkaDefault
	}
	defer cl.Close()
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return kafkaDefault
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		return kafkaDefault
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" {
			if n, err := strconv.ParseInt(c.MaybeValue(), 10, 32); err == nil && n > 0 {
				return int32(n)
			}
		}
	}
	return kafkaDefault
}

func (o *produceOptions) produceLines(ctx context.Context, cl *kgo.Client, in io.Reader,
	topic string, hdrs []kgo.RecordHeader, onDone func(*kgo.Record, error)) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), o.maxLine)
	if o.delimiter != "\n" {
		sc.Split(splitOn([]byte(o.delimiter)))
	}
	sep := []byte(o.separator)
	for sc.Scan() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		line := sc.Bytes()
		if o.delimiter == "\n" {
			line = bytes.TrimSuffix(line, []byte("\r"))
		}
		rec := &kgo.Record{Topic: topic, Headers: hdrs}
		if len(sep) > 0 {
			if k, v, ok := bytes.Cut(line, sep); ok {
				rec.Key = bytes.Clone(k)
				line = v
			}
		}
		rec.Value = bytes.Clone(line)
		if o.partition >= 0 {
			rec.Partition = o.partition
		}
		cl.Produce(ctx, rec, onDone)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return usageErr("an input line is longer than --max-line-bytes (%d)", o.maxLine)
		}
		return fmt.Errorf("read input: %w", err)
	}
	return nil
}

// splitOn is a bufio.SplitFunc for records ended by delim; the last
// record needs no delimiter.
func splitOn(delim []byte) bufio.SplitFunc {
	return func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.Index(data, delim); i >= 0 {
			return i + len(delim), data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	}
}

func produceError(topic string, n int64, err error, limit int32) error {
	failed := plural(int(n), "record")
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("%s not produced: no topic %q (or no such partition) — create it with \"strand topic create %s\"", failed, topic, topic)
	case strings.HasPrefix(err.Error(), "invalid record partitioning choice"): // franz-go's, untyped
		var pick, have int
		if _, serr := fmt.Sscanf(err.Error(), "invalid record partitioning choice of %d from %d available", &pick, &have); serr == nil {
			return fmt.Errorf("%s not produced: topic %q has no partition %d (it has %d)", failed, topic, pick, have)
		}
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return fmt.Errorf("%s not produced: a record is larger than %d bytes, topic %q's max.message.bytes (raise it with \"strand topic alter %s --config max.message.bytes=N\", or pass --max-message-bytes)", failed, limit, topic, topic)
	}
	return fmt.Errorf("%s not produced: %w", failed, err)
}

// diagnoseTopic explains why produces to topic cannot be acknowledged,
// from the metadata: partitions without a leader, and partitions with
// fewer in-sync replicas than min.insync.replicas (NOT_ENOUGH_REPLICAS for
// acks=all, which kgo retries until it gives up). "" when nothing shows.
func diagnoseTopic(cl *kgo.Client, topic string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return ""
	}
	td, ok := details[topic]
	if !ok || td.Err != nil {
		return ""
	}
	minISR := 1
	if rcs, err := adm.DescribeTopicConfigs(ctx, topic); err == nil {
		if rc, err := rcs.On(topic, nil); err == nil {
			for _, c := range rc.Configs {
				if c.Key == "min.insync.replicas" {
					minISR, _ = strconv.Atoi(c.MaybeValue())
				}
			}
		}
	}
	var lines []string
	for _, p := range td.Partitions.Sorted() {
		switch {
		case p.Leader < 0:
			lines = append(lines, fmt.Sprintf("partition %d has no leader: every in-sync replica (%s) is down; it comes back with one of them", p.Partition, ints(p.ISR)))
		case len(p.ISR) < minISR:
			lines = append(lines, fmt.Sprintf("partition %d has %s in sync (%s) and min.insync.replicas is %d: the broker refuses acks=all with NOT_ENOUGH_REPLICAS until a replica catches up (strand topic describe %s shows the ISR)",
				p.Partition, plural(len(p.ISR), "replica"), ints(p.ISR), minISR, topic))
		}
	}
	return strings.Join(lines, "\n")
}

// parseHeaders parses repeated --header k=v values, keeping their order.
func parseHeaders(vals []string) ([]kgo.RecordHeader, error) {
	var hs []kgo.RecordHeader
	for _, kv := range vals {
		k, v, ok := bytes.Cut([]byte(kv), []byte("="))
		if !ok || len(k) == 0 {
			return nil, usageErr("--header %q: want key=value", kv)
		}
		hs = append(hs, kgo.RecordHeader{Key: string(k), Value: v})
	}
	return hs, nil
}
