package kafka

// Transactions on the wire (KIP-98, KIP-447, KIP-890): AddPartitionsToTxn
// (24), AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers (27, between
// nodes), TxnOffsetCommit (28), DescribeTransactions (65) and
// ListTransactions (66), plus the transactional branches of
// InitProducerId, Produce and OffsetFetch. The coordinator's rules are
// internal/txn's; this file maps requests and answers.
//
// Behavior:
//   - Errors are Kafka's, in Kafka's order (see internal/txn); PRODUCER_FENCED
//     is answered as INVALID_PRODUCER_EPOCH to versions that predate it.
//   - A request for a transactional id this node does not coordinate
//     answers NOT_COORDINATOR; while its partition loads,
//     COORDINATOR_LOAD_IN_PROGRESS.
//   - AddPartitionsToTxn v4+ (the broker-to-broker batched form) is served
//     with VerifyOnly.
//   - TxnOffsetCommit goes to the group's coordinator: its offsets are held
//     pending until the transaction's marker reaches __consumer_offsets.

import (
	"context"
	"errors"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/txn"
)

// txnCoordinator finds the local coordinator of id, or the code to answer.
func (s *Server) txnCoordinator(id string) (*broker.TxnCoordinator, int16) {
	c, err := s.b.TxnCoordinatorFor(id)
	switch {
	case err == nil:
		return c, 0
	case errors.Is(err, broker.ErrCoordinatorLoading):
		return nil, kerr.CoordinatorLoadInProgress.Code
	default:
		return nil, kerr.NotCoordinator.Code
	}
}

func txnCode(api, version int16, c txn.Code) int16 { return int16(txn.ForVersion(api, version, c)) }

// initTransactional is InitProducerId with a transactional id.
func (s *Server) initTransactional(ctx context.Context, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	c, code := s.txnCoordinator(*req.TransactionalID)
	if code != 0 {
		resp.ErrorCode = code
		return
	}
	r := c.InitProducerID(ctx, txn.InitRequest{
		TransactionalID: *req.TransactionalID, TimeoutMs: req.TransactionTimeoutMillis,
		ProducerID: producer.ID(req.ProducerID), Epoch: producer.Epoch(req.ProducerEpoch),
	})
	resp.ErrorCode = txnCode(txn.APIInitProducerID, req.Version, r.Code)
	if r.Code == txn.CodeNone {
		resp.ProducerID, resp.ProducerEpoch = int64(r.ProducerID), int16(r.Epoch)
	}
}

// unknownPartitions returns the partitions of parts that do not exist or
// that a request of this version may not enlist (nil: none).
func (s *Server) unknownPartitions(version int16, parts []txn.Partition) map[txn.Partition]bool {
	var out map[txn.Partition]bool
	for _, p := range parts {
		t, err := s.b.Topic(p.Topic)
		// v4+ comes from partition leaders, which enlist the group's
		// offsets partition for TxnOffsetCommit; clients may not.
		internal := broker.IsInternalTopic(p.Topic) && (version < 4 || p.Topic != txn.OffsetsTopic)
		if err != nil || p.Partition < 0 || p.Partition >= t.Partitions() || internal {
			if out == nil {
				out = map[txn.Partition]bool{}
			}
			out[p] = true
		}
	}
	return out
}

func (s *Server) handleAddPartitionsToTxn(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 {
		for _, rt := range req.Transactions {
			var parts []txn.Partition
			for _, t := range rt.Topics {
				for _, p := range t.Partitions {
					parts = append(parts, txn.Partition{Topic: t.Topic, Partition: p})
				}
			}
			codes := s.addPartitions(ctx, req.Version, rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly, parts)
			out := kmsg.NewAddPartitionsToTxnResponseTransaction()
			out.TransactionalID = rt.TransactionalID
			for _, t := range rt.Topics {
				ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				ot.Topic = t.Topic
				for _, p := range t.Partitions {
					op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					op.Partition, op.ErrorCode = p, codes[txn.Partition{Topic: t.Topic, Partition: p}]
					ot.Partitions = append(ot.Partitions, op)
				}
				out.Topics = append(out.Topics, ot)
			}
			resp.Transactions = append(resp.Transactions, out)
		}
		return resp, nil
	}
	var parts []txn.Partition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, txn.Partition{Topic: t.Topic, Partition: p})
		}
	}
	codes := s.addPartitions(ctx, req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, parts)
	for _, t := range req.Topics {
		ot := kmsg.NewAddPartitionsToTxnResponseTopic()
		ot.Topic = t.Topic
		for _, p := range t.Partitions {
			op := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			op.Partition, op.ErrorCode = p, codes[txn.Partition{Topic: t.Topic, Partition: p}]
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

// addPartitions adds (or with verifyOnly, checks) parts and returns each
// one's code.
func (s *Server) addPartitions(ctx context.Context, version int16, id string, pid int64, epoch int16, verifyOnly bool, parts []txn.Partition) map[txn.Partition]int16 {
	out := make(map[txn.Partition]int16, len(parts))
	all := func(code int16) map[txn.Partition]int16 {
		for _, p := range parts {
			out[p] = code
		}
		return out
	}
	if unknown := s.unknownPartitions(version, parts); unknown != nil {
		for _, p := range parts {
			out[p] = kerr.OperationNotAttempted.Code
			if unknown[p] {
				out[p] = kerr.UnknownTopicOrPartition.Code
			}
		}
		return out
	}
	c, code := s.txnCoordinator(id)
	if code != 0 {
		return all(code)
	}
	if verifyOnly {
		code, per := c.Verify(id, producer.ID(pid), producer.Epoch(epoch), parts)
		if code != txn.CodeNone {
			return all(int16(code))
		}
		for p, c := range per {
			out[p] = int16(c)
		}
		return out
	}
	v := txn.TV0
	if version > 3 {
		v = txn.TV2
	}
	r := c.AddPartitions(ctx, txn.AddRequest{TransactionalID: id, ProducerID: producer.ID(pid), Epoch: producer.Epoch(epoch), Partitions: parts, Client: v})
	return all(txnCode(txn.APIAddPartitionsToTxn, version, r.Code))
}

func (s *Server) handleAddOffsetsToTxn(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	c, code := s.txnCoordinator(req.TransactionalID)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	r := c.AddOffsets(ctx, req.TransactionalID, producer.ID(req.ProducerID), producer.Epoch(req.ProducerEpoch), req.Group, txn.TV0)
	resp.ErrorCode = txnCode(txn.APIAddOffsetsToTxn, req.Version, r.Code)
	return resp, nil
}

func (s *Server) handleEndTxn(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	c, code := s.txnCoordinator(req.TransactionalID)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	v := txn.TV0
	if req.Version >= 5 {
		v = txn.TV2
	}
	r := c.EndTxn(ctx, txn.EndRequest{
		TransactionalID: req.TransactionalID, ProducerID: producer.ID(req.ProducerID),
		Epoch: producer.Epoch(req.ProducerEpoch), Commit: req.Commit, Client: v,
	})
	resp.ErrorCode = txnCode(txn.APIEndTxn, req.Version, r.Code)
	if r.Code == txn.CodeNone && req.Version >= 5 {
		resp.ProducerID, resp.ProducerEpoch = int64(r.ProducerID), int16(r.Epoch)
	}
	return resp, nil
}

// handleWriteTxnMarkers writes markers a coordinator on another node sends
// for partitions this node leads (internal listener only).
func (s *Server) handleWriteTxnMarkers(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			topic, terr := s.b.Topic(t.Topic)
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				err := terr
				var part *broker.Partition
				if err == nil {
					part, err = topic.Partition(broker.PartitionID(p))
				}
				if err == nil {
					err = part.WriteMarker(ctx, producer.ID(m.ProducerID), producer.Epoch(m.ProducerEpoch), m.Committed, m.CoordinatorEpoch)
				}
				rp.ErrorCode = errorCode(err)
				s.logUnknown("write transaction marker", err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func (s *Server) handleTxnOffsetCommit(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	answer := func(code func(topic string, p int32) int16) (kmsg.Response, error) {
		for _, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code(rt.Topic, rp.Partition)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	all := func(c int16) (kmsg.Response, error) { return answer(func(string, int32) int16 { return c }) }
	// The transaction must hold the group's offsets partition (v5+ adds
	// it implicitly, TV2), and the producer must be the id's current one.
	t, err := s.b.Topic(broker.ConsumerOffsetsTopic)
	if err != nil {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	part := txn.Partition{Topic: txn.OffsetsTopic, Partition: txn.PartitionFor(req.Group, t.Partitions())}
	switch code := s.enlist(ctx, req.TransactionalID, producer.ID(req.ProducerID), producer.Epoch(req.ProducerEpoch), []txn.Partition{part}, req.Version >= 5)[part]; code {
	case txn.CodeNone:
	case txn.CodeNotCoordinator, txn.CodeCoordinatorNotAvailable, coordinatorLoading:
		return all(kerr.CoordinatorNotAvailable.Code) // retriable: the client asks again
	case txn.CodeTransactionAbortable:
		if req.Version < 5 { // verified: the offsets partition was never added
			return all(kerr.InvalidTxnState.Code)
		}
		return all(int16(code))
	default:
		return all(int16(code))
	}
	g, err := s.b.GroupCoordinator(req.Group)
	if err != nil {
		return all(errorCode(err))
	}
	offsets := map[group.TopicPartition]group.OffsetAndMetadata{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			md := ""
			if rp.Metadata != nil {
				md = *rp.Metadata
			}
			offsets[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = group.OffsetAndMetadata{
				Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Metadata: md,
			}
		}
	}
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	gen := req.Generation
	if req.Version < 3 {
		gen = -1
	}
	codes := g.TxnCommitOffsets(ctx, group.TxnOffsetCommitRequest{
		OffsetCommitRequest: group.OffsetCommitRequest{GroupID: req.Group, Generation: group.Generation(gen), MemberID: req.MemberID, InstanceID: instance, Offsets: offsets},
		ProducerID:          req.ProducerID, Epoch: req.ProducerEpoch,
	})
	return answer(func(topic string, p int32) int16 {
		return int16(codes[group.TopicPartition{Topic: topic, Partition: p}])
	})
}

func (s *Server) handleDescribeTransactions(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		c, code := s.txnCoordinator(id)
		if code != 0 {
			st.ErrorCode = code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		md, tc := c.Describe(id)
		st.ErrorCode = int16(tc)
		if tc == txn.CodeNone {
			st.State, st.TimeoutMillis, st.StartTimestamp = md.State.String(), md.TimeoutMs, md.StartMs
			st.ProducerID, st.ProducerEpoch = int64(md.ProducerID), int16(md.Epoch)
			var cur *kmsg.DescribeTransactionsResponseTransactionStateTopic
			for _, p := range md.Partitions {
				if cur == nil || cur.Topic != p.Topic {
					st.Topics = append(st.Topics, kmsg.NewDescribeTransactionsResponseTransactionStateTopic())
					cur = &st.Topics[len(st.Topics)-1]
					cur.Topic = p.Topic
				}
				cur.Partitions = append(cur.Partitions, p.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

func (s *Server) handleListTransactions(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		pattern = re
	}
	f := txn.ListFilter{States: req.StateFilters, DurationMs: -1}
	if req.Version >= 1 {
		f.DurationMs = req.DurationFilterMillis
	}
	for _, id := range req.ProducerIDFilters {
		f.ProducerIDs = append(f.ProducerIDs, producer.ID(id))
	}
	mds, unknown := s.b.ListTransactions(f)
	resp.UnknownStateFilters = unknown
	for _, md := range mds {
		if pattern != nil && !pattern.MatchString(md.TransactionalID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = md.TransactionalID, int64(md.ProducerID), md.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

// coordinatorLoading is COORDINATOR_LOAD_IN_PROGRESS as a coordinator code.
const coordinatorLoading = txn.Code(14)

// enlist adds parts to producer pid's transaction (add: TV2's implicit add
// by Produce v12 and TxnOffsetCommit v5) or checks that they are in it, at
// the coordinator of id wherever it runs: here, or on another node through
// AddPartitionsToTxn v5 as Kafka's partition leaders send it. It returns
// each partition's code; a coordinator that cannot be reached is
// COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR, for the caller to answer
// with its API's retriable error.
func (s *Server) enlist(ctx context.Context, id string, pid producer.ID, epoch producer.Epoch, parts []txn.Partition, add bool) map[txn.Partition]txn.Code {
	out := make(map[txn.Partition]txn.Code, len(parts))
	all := func(c txn.Code) map[txn.Partition]txn.Code {
		for _, p := range parts {
			out[p] = c
		}
		return out
	}
	c, code := s.txnCoordinator(id)
	switch {
	case code == kerr.NotCoordinator.Code && s.b.Clustered():
		codes, err := s.b.EnlistRemote(ctx, id, pid, epoch, parts, !add)
		if err != nil {
			s.logger.Warn("kafka: transaction coordinator not reached", "transactional_id", id, "err", err)
			return all(txn.CodeCoordinatorNotAvailable)
		}
		for p, c := range codes {
			out[p] = txn.Code(c)
		}
		return out
	case code != 0:
		return all(txn.Code(code))
	case add:
		return all(c.AddPartitions(ctx, txn.AddRequest{TransactionalID: id, ProducerID: pid, Epoch: epoch, Partitions: parts, Client: txn.TV2}).Code)
	}
	top, per := c.Verify(id, pid, epoch, parts)
	if top != txn.CodeNone {
		return all(top)
	}
	return per
}

// dlqEnlister is the Enlister of a transactional produce's batch: it adds
// the DLQ partition that validation sends records to into the transaction
// of the batch's producer, at its coordinator wherever that runs.
func (s *Server) dlqEnlister(ctx context.Context, id string, records []byte) broker.Enlister {
	return func(topic string, partition int32) error {
		h, err := record.ParseHeader(records)
		if err != nil {
			return err
		}
		part := txn.Partition{Topic: topic, Partition: partition}
		switch code := s.enlist(ctx, id, producer.ID(h.ProducerID), producer.Epoch(h.ProducerEpoch), []txn.Partition{part}, true)[part]; code {
		case txn.CodeNone:
			return nil
		case txn.CodeNotCoordinator, txn.CodeCoordinatorNotAvailable, coordinatorLoading:
			return kerr.NotEnoughReplicas // retriable, as for the batch's own partition
		case txn.CodeProducerFenced:
			return kerr.InvalidProducerEpoch
		default:
			return kerr.ErrorForCode(int16(code))
		}
	}
}

// checkTxnProduce makes sure each transactional batch's partition is in
// its producer's transaction before it is appended (register before
// append: a failed append then leaves a transaction the client must
// abort, never data outside one). It returns the jobs that may go on and
// reports the others through fail.
func (s *Server) checkTxnProduce(ctx context.Context, version int16, id string, jobs []produceJob, fail func(*kmsg.ProduceResponseTopicPartition, error)) []produceJob {
	var need []txn.Partition
	var pid int64
	var epoch int16
	for _, j := range jobs {
		h, err := record.ParseHeader(j.records)
		if err != nil || !h.IsTransactional() || h.ProducerID < 0 {
			continue // the append refuses what is wrong with it
		}
		pid, epoch = h.ProducerID, h.ProducerEpoch
		if !j.p.InTxn(producer.ID(h.ProducerID), producer.Epoch(h.ProducerEpoch)) {
			need = append(need, txn.Partition{Topic: j.p.Topic(), Partition: int32(j.p.ID())})
		}
	}
	if len(need) == 0 {
		return jobs
	}
	codes := s.enlist(ctx, id, producer.ID(pid), producer.Epoch(epoch), need, version >= 12)
	kept := jobs[:0]
	for _, j := range jobs {
		code, checked := codes[txn.Partition{Topic: j.p.Topic(), Partition: int32(j.p.ID())}]
		switch {
		case !checked:
			kept = append(kept, j)
		case code == txn.CodeNone:
			j.verified = true
			kept = append(kept, j)
		case code == txn.CodeNotCoordinator || code == txn.CodeCoordinatorNotAvailable || code == coordinatorLoading:
			// Kafka's answer while the coordinator moves: retriable for
			// every producer, which then sends the batch again.
			fail(j.resp, kerr.NotEnoughReplicas)
		case code == txn.CodeTransactionAbortable && version < 11:
			fail(j.resp, kerr.InvalidTxnState)
		case code == txn.CodeProducerFenced:
			fail(j.resp, kerr.InvalidProducerEpoch)
		default:
			fail(j.resp, kerr.ErrorForCode(int16(code)))
		}
	}
	return kept
}
