package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTopicCreateCmd(o *clientOptions) *cobra.Command {
	var (
		partitions  int32
		replication int16
		configs     []string
		ifNotExists bool
		assignment  string
	)
	cmd := &cobra.Command{
		Use:   "create <topic>...",
		Short: "Create topics",
		Example: `  strand topic create orders --partitions 3
  strand topic create orders --partitions 3 --replication-factor 3 --config min.insync.replicas=2
  strand topic create pinned --replica-assignment 1:2:3,2:3:1
  strand topic create users --config cleanup.policy=compact --config retention.ms=-1`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			kv, err := parseKV("config", configs)
			if err != nil {
				return err
			}
			cfg := make(map[string]*string, len(kv))
			for k, v := range kv {
				cfg[k] = &v
			}
			replicas, err := parseAssignment(assignment)
			if err != nil {
				return err
			}
			if replicas != nil && (partitions > 0 || replication > 0) {
				return errors.New("--replica-assignment sets the partitions and their replicas: leave out --partitions and --replication-factor")
			}
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, _ bool) error {
				var resps kadm.CreateTopicResponses
				var err error
				// The broker answers once every partition exists; a topic of
				// thousands takes seconds. The request's own timeout is
				// --timeout, so the client does not give up first and
				// retry into "already exists".
				millis := int32(min(o.timeout.Milliseconds(), math.MaxInt32))
				if replicas != nil {
					resps, err = createAssigned(ctx, cl, millis, replicas, cfg, topics)
				} else {
					adm := kadm.NewClient(cl)
					adm.SetTimeoutMillis(millis)
					resps, err = adm.CreateTopics(ctx, partitions, replication, cfg, topics...)
				}
				if errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("create topics: no answer within --timeout %v: the broker may still be creating them — check with \"strand topic describe\", and give topics of thousands of partitions a longer --timeout: %w", o.timeout, err)
				}
				if err != nil {
					return fmt.Errorf("create topics: %w", err)
				}
				type created struct {
					Topic       string `json:"topic"`
					Partitions  int32  `json:"partitions"`
					Replication int16  `json:"replication_factor"`
					Existed     bool   `json:"existed,omitempty"`
				}
				var out []created
				var errs []error
				for _, r := range resps.Sorted() {
					existed := errors.Is(r.Err, kerr.TopicAlreadyExists)
					switch {
					case existed && ifNotExists:
					case existed:
						errs = append(errs, fmt.Errorf("topic %q already exists — see \"strand topic describe %s\", or pass --if-not-exists", r.Topic, r.Topic))
						continue
					case r.Err != nil:
						errs = append(errs, kafkaError(fmt.Sprintf("cannot create topic %q", r.Topic), r.Err, &r.ErrMessage))
						continue
					}
					out = append(out, created{r.Topic, r.NumPartitions, r.ReplicationFactor, existed})
				}
				w := cmd.OutOrStdout()
				if asJSON {
					if out == nil {
						out = []created{}
					}
					if err := writeJSON(w, out); err != nil {
						return err
					}
				} else {
					for _, c := range out {
						if c.Existed {
							fmt.Fprintf(w, "topic %q already exists\n", c.Topic)
							continue
						}
						fmt.Fprintf(w, "created topic %q (%s, replication factor %d)\n", c.Topic, plural(int(c.Partitions), "partition"), c.Replication)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	f := cmd.Flags()
	f.Int32VarP(&partitions, "partitions", "p", -1, "number of partitions (default: the broker's num.partitions)")
	f.Int16VarP(&replication, "replication-factor", "r", -1, "replicas per partition (default: the broker's default)")
	f.StringArrayVarP(&configs, "config", "c", nil, "topic config key=value (repeatable), e.g. retention.ms=3600000")
	f.BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the topic already exists")
	f.StringVar(&assignment, "replica-assignment", "", "place each partition's replicas yourself: broker ids per partition, \":\" between replicas (the first leads), \",\" between partitions, e.g. 1:2:3,2:3:1")
	return cmd
}

// parseAssignment parses kafka-topics.sh's --replica-assignment form.
func parseAssignment(s string) ([][]int32, error) {
	if s == "" {
		return nil, nil
	}
	var out [][]int32
	for i, part := range strings.Split(s, ",") {
		var reps []int32
		for _, id := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--replica-assignment %q: partition %d's replica %q is not a broker id", s, i, id)
			}
			reps = append(reps, int32(n))
		}
		out = append(out, reps)
	}
	return out, nil
}

// createAssigned creates topics with the partitions and replicas given
// (CreateTopics' ReplicaAssignment, which kadm does not expose).
func createAssigned(ctx context.Context, cl *kgo.Client, timeoutMillis int32, replicas [][]int32, cfg map[string]*string, topics []string) (kadm.CreateTopicResponses, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = timeoutMillis
	for _, name := range topics {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
		for i, reps := range replicas {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), reps
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
		for k, v := range cfg {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, v
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := kadm.CreateTopicResponses{}
	for _, t := range resp.Topics {
		r := kadm.CreateTopicResponse{Topic: t.Topic, NumPartitions: int32(len(replicas)), ReplicationFactor: int16(len(replicas[0])),
			Err: kerr.ErrorForCode(t.ErrorCode)}
		if t.ErrorMessage != nil {
			r.ErrMessage = *t.ErrorMessage
		}
		out[t.Topic] = r
	}
	return out, nil
}

// plural is "1 partition", "3 partitions".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// kafkaError is a broker's refusal as one sentence: what was asked (ctx),
// then the broker's own message when it sent one — Strand's and Kafka's
// say what was wrong — and Kafka's generic text for the code only when it
// did not. It still wraps err, so exit codes and errors.Is see the code.
func kafkaError(ctx string, err error, msg *string) error {
	text := err.Error()
	if msg != nil && *msg != "" {
		text = strings.TrimPrefix(*msg, ctx+": ") // Strand repeats what was asked
		text = echoedContext.ReplaceAllString(text, "")
	}
	return &sentenceErr{text: ctx + ": " + text, err: err}
}

// echoedContext is what a Strand broker puts before its reason ("create
// topic "x": "), which the command has already said.
var echoedContext = regexp.MustCompile(`^(?:create topic|alter configs of|delete topic|create partitions of) "[^"]*": `)

type sentenceErr struct {
	text string
	err  error
}

func (e *sentenceErr) Error() string { return e.text }
func (e *sentenceErr) Unwrap() error { return e.err }
