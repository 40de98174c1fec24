package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

// Produce: v0-v13.
//
// Behavior:
//   - v0–v2 carry legacy message sets (magic 0 and 1): each partition's set is
//     checked (per-message CRC-32) and up-converted to one v2 batch with the
//     producer's codec, as Kafka's log validator does. Magic-0 messages have
//     no timestamp and get the broker's clock.
//   - acks 0, 1 and -1 (all); any other value is INVALID_REQUIRED_ACKS for
//     every partition. acks=0 gets no response; if any partition failed,
//     the connection is closed instead (as Kafka does, so the client
//     refreshes its metadata).
//   - Each partition's records must be exactly one v2 record batch: its CRC
//     is checked (CORRUPT_MESSAGE), its size against the topic's
//     max.message.bytes (MESSAGE_TOO_LARGE), a non-v2 batch is
//     UNSUPPORTED_FOR_MESSAGE_FORMAT, several batches, control batches and a
//     record count that does not match the offset delta are INVALID_RECORD.
//     Batches are stored as sent, compressed with any of the four codecs;
//     records are not decompressed (except to validate them, see below).
//   - LogAppendTime topics: the batch is stamped with the broker's clock and
//     LogAppendTime is returned.
//   - Validated topics (strand.validation, strand.validation.key.required;
//     a Strand extension): invalid records go to the topic's DLQ with the
//     reason attached and the produce still succeeds with the batch's
//     usual base offset; their offsets are gaps in the topic, as after
//     compaction (see package dlq). With strand.validation.action=
//     reject the batch fails INVALID_RECORD instead, v8+ with one
//     ErrorRecords entry (batch index, reason) per invalid record.
//   - Idempotent producers: a retry of one of the producer's last five
//     batches is answered with the original base offset and not written
//     again; OUT_OF_ORDER_SEQUENCE_NUMBER and INVALID_PRODUCER_EPOCH as
//     Kafka (see package producer).
//   - An unknown topic is auto-created when auto.create.topics.enable is on,
//     else UNKNOWN_TOPIC_OR_PARTITION; v13 addresses topics by id
//     (UNKNOWN_TOPIC_ID).
//   - acks=-1 with fewer in-sync replicas than min.insync.replicas:
//     NOT_ENOUGH_REPLICAS, nothing written.
//   - v8+: ErrorMessage says what was wrong.
//   - v10+: a NOT_LEADER_OR_FOLLOWER partition names the leader this node
//     knows (CurrentLeader) and the response lists its endpoint
//     (NodeEndpoints), so clients move without a metadata request
//     (KIP-951; leader_hint.go).
//   - acks=-1: TimeoutMillis bounds the wait for the batch to commit (its
//     fsync, when the flush policy asks for one, and the high watermark);
//     past it the partition answers REQUEST_TIMED_OUT, as Kafka's
//     DelayedProduce does. The batch stays written, and becomes visible
//     when its fsync completes.
//   - Clients cannot write to an internal topic (__consumer_offsets):
//     INVALID_TOPIC_EXCEPTION, as Kafka; only the group coordinator writes
//     there.
//
//   - Transactional batches (KIP-98): a batch for a partition its
//     transaction has not yet touched is checked with the coordinator first
//     (KIP-890 part 1); v12+ adds the partition to the transaction
//     implicitly (TV2). A partition outside the transaction answers
//     INVALID_TXN_STATE; a fenced epoch INVALID_PRODUCER_EPOCH; a
//     non-transactional batch from a producer inside a transaction
//     INVALID_TXN_STATE. In a cluster, a coordinator on another node is
//     asked with AddPartitionsToTxn v5 (VerifyOnly below v12), as Kafka's
//     brokers ask; one that cannot be reached answers NOT_ENOUGH_REPLICAS,
//     which every producer retries.

func (s *Server) handleProduce(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acks := broker.Acks(req.Acks)
	var reqErr error
	switch {
	case acks != broker.AcksNone && acks != broker.AcksLeader && acks != broker.AcksAll:
		reqErr = fmt.Errorf("%w: acks must be -1, 0 or 1, got %d", kerr.InvalidRequiredAcks, acks)
	}
	// First resolve every partition, then append: in parallel when the
	// request names each partition once (appends to different partitions
	// are independent; their write syscalls overlap).
	nparts := 0
	for _, rt := range req.Topics {
		nparts += len(rt.Partitions)
	}
	jobs := make([]produceJob, 0, nparts)
	var errs map[*kmsg.ProduceResponseTopicPartition]error // rare: allocated on first error
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		st.Default()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, terr := s.produceTopic(req.Version, rt)
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			err := reqErr
			if err == nil {
				err = terr
			}
			var p *broker.Partition
			if err == nil {
				p, err = t.Partition(broker.PartitionID(rp.Partition))
			}
			if err != nil {
				if errs == nil {
					errs = make(map[*kmsg.ProduceResponseTopicPartition]error)
				}
				errs[sp] = err
				continue
			}
			records := rp.Records
			if req.Version < 3 {
				if records, err = upConvert(rp.Records); err != nil {
					if errs == nil {
						errs = make(map[*kmsg.ProduceResponseTopicPartition]error)
					}
					errs[sp] = err
					continue
				}
			}
			jobs = append(jobs, produceJob{p: p, records: records, resp: sp})
		}
	}
	if req.TransactionID != nil {
		jobs = s.checkTxnProduce(ctx, req.Version, *req.TransactionID, jobs, func(sp *kmsg.ProduceResponseTopicPartition, err error) {
			if errs == nil {
				errs = make(map[*kmsg.ProduceResponseTopicPartition]error)
			}
			errs[sp] = err
		})
		for i := range jobs {
			jobs[i].enlist = s.dlqEnlister(ctx, *req.TransactionID, jobs[i].records)
		}
	}
	var deadline time.Time // bounds only a commit wait that blocks
	if acks == broker.AcksAll && req.TimeoutMillis > 0 {
		deadline = time.Now().Add(time.Duration(req.TimeoutMillis) * time.Millisecond)
	}
	if appendProduceJobs(jobs, acks) || acks == broker.AcksNone {
		return s.finishProduce(ctx, req, resp, jobs, errs, deadline)
	}
	// Some batch waits for its followers or its fsync: answer once it is
	// committed, and meanwhile let the connection append its next
	// requests (pipelined produce; conn.go).
	return &deferred{Response: resp, wait: func() kmsg.Response {
		r, _ := s.finishProduce(ctx, req, resp, jobs, errs, deadline) // acks≠0: never an error
		return r
	}}, nil
}

// finishProduce waits for every job's commit and fills resp with each
// partition's outcome; for acks=0 it answers nothing, and fails the
// connection when a batch failed.
func (s *Server) finishProduce(ctx context.Context, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, jobs []produceJob, errs map[*kmsg.ProduceResponseTopicPartition]error, deadline time.Time) (kmsg.Response, error) {
	for i := range jobs {
		jobs[i].wait(ctx, deadline)
	}
	failed := false
	for _, j := range jobs {
		if j.err != nil {
			if errs == nil {
				errs = make(map[*kmsg.ProduceResponseTopicPartition]error)
			}
			errs[j.resp] = j.err
		}
	}
	for sp, err := range errs {
		sp.ErrorCode = errorCode(err)
		sp.BaseOffset = -1 // as Kafka answers a failed partition
		if req.Version >= 8 {
			sp.ErrorMessage = errMessage(err)
			var re *broker.RecordErrors // strand.validation.action=reject
			if errors.As(err, &re) {
				for _, r := range re.Records {
					er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
					er.RelativeOffset, er.ErrorMessage = r.Index, &r.Reason
					sp.ErrorRecords = append(sp.ErrorRecords, er)
				}
			}
		}
		s.logUnknown("produce", err)
		failed = true
	}
	if broker.Acks(req.Acks) == broker.AcksNone {
		if failed {
			return nil, errors.New("kafka: acks=0 produce failed; closing the connection so the client refreshes metadata")
		}
		return nil, nil
	}
	if failed {
		s.addProduceLeaderHints(resp)
	}
	return resp, nil
}

// produceJob is one partition's batch of a produce request.
type produceJob struct {
	p       *broker.Partition
	records []byte
	resp    *kmsg.ProduceResponseTopicPartition
	err     error
	// verified: the transaction coordinator confirmed this transactional
	// batch's partition is in its producer's transaction.
	verified bool
	// enlist, for a transactional produce, adds a DLQ partition to the
	// transaction when validation quarantines records of the batch.
	enlist broker.Enlister
	res    broker.AppendResult
	commit broker.Commit
}

// append appends the job's batch; its commit is waited for by wait.
func (j *produceJob) append(acks broker.Acks) {
	var err error
	switch {
	case j.enlist != nil:
		j.res, j.commit, err = j.p.AppendTxnAsync(j.records, acks, j.verified, j.enlist)
	case j.verified:
		j.res, j.commit, err = j.p.AppendVerifiedAsync(j.records, acks)
	default:
		j.res, j.commit, err = j.p.AppendAsync(j.records, acks)
	}
	j.records = nil // the request's frame is freed once the handler returns
	j.err = err
}

// wait waits for the appended batch's commit, until deadline when it has
// one, and fills the job's partition answer.
func (j *produceJob) wait(ctx context.Context, deadline time.Time) {
	if j.err != nil {
		return
	}
	// A timer only for a wait that blocks: most commits are done by the
	// time the append returns.
	if !deadline.IsZero() && !j.commit.Done() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if j.err = j.commit.Wait(ctx); j.err != nil {
		return
	}
	j.resp.BaseOffset = int64(j.res.BaseOffset)
	j.resp.LogAppendTime = j.res.LogAppendTime
	j.resp.LogStartOffset = int64(j.res.LogStartOffset)
}

// appendProduceJobs appends every job's batch, concurrently unless two
// jobs name the same partition (then in request order, so a client's
// sequence order holds). It reports whether every commit is done already.
func appendProduceJobs(jobs []produceJob, acks broker.Acks) bool {
	distinct := len(jobs) > 1
	if distinct {
		seen := make(map[*broker.Partition]bool, len(jobs))
		for _, j := range jobs {
			if seen[j.p] {
				distinct = false
				break
			}
			seen[j.p] = true
		}
	}
	if !distinct {
		for i := range jobs {
			jobs[i].append(acks)
		}
	} else {
		// A few workers take the jobs in turn rather than a goroutine
		// each: a request spread over thousands of partitions would
		// otherwise start thousands of goroutines, each growing a fresh
		// stack to the depth of the append path (10% of the broker's CPU
		// at 10,000 partitions).
		var wg sync.WaitGroup
		var next atomic.Int64
		for range min(len(jobs), maxParallelAppends) {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(len(jobs)); i = next.Add(1) - 1 {
					jobs[i].append(acks)
				}
			})
		}
		wg.Wait()
	}
	for _, j := range jobs {
		if j.err == nil && !j.commit.Done() {
			return false
		}
	}
	return true
}

// maxParallelAppends bounds the goroutines one produce request uses.
const maxParallelAppends = 8

func (s *Server) produceTopic(version int16, rt kmsg.ProduceRequestTopic) (*broker.Topic, error) {
	var (
		t   *broker.Topic
		err error
	)
	if version >= 13 {
		t, err = s.b.TopicByID(broker.TopicID(rt.TopicID))
	} else {
		t, err = s.b.TopicOrCreate(rt.Topic)
	}
	// Another node's schema registry writes _schemas through the internal
	// listener (package schemastore); clients never do.
	if err == nil && broker.IsInternalTopic(t.Name) && !(s.cfg.Internal && t.Name == broker.SchemasTopic) {
		return nil, fmt.Errorf("%w: cannot append to internal topic %s", broker.ErrInvalidTopic, t.Name)
	}
	return t, err
}

// upConvert turns a Produce v0–v2 legacy message set into a v2 batch.
func upConvert(set []byte) ([]byte, error) {
	b, err := record.FromMessageSet(set, time.Now().UnixMilli())
	switch {
	case errors.Is(err, record.ErrCRC):
		return nil, fmt.Errorf("%w: %w", broker.ErrCorruptMessage, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", broker.ErrInvalidRecord, err)
	}
	return b, nil
}
