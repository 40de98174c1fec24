package kafka

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
)

// Fetch: v4-v18.
//
// Behavior:
//   - Returns whole record batches exactly as stored (no re-encoding), never
//     past the high watermark. A batch that starts before the fetch offset
//     is included; clients skip its earlier records, as with Kafka.
//   - MaxBytes bounds the response and PartitionMaxBytes each partition,
//     except that the first batch of the first partition with data is
//     returned even when larger (KIP-74), so a consumer can always progress.
//   - MinBytes/MaxWaitMillis long-poll: if fewer than MinBytes are
//     available, the request waits until enough arrives (woken by the
//     partitions' high watermark advancing), MaxWaitMillis pass, or the
//     connection closes. Errors answer at once.
//   - HighWatermark, LastStableOffset (first offset of the oldest undecided
//     transaction, else the high watermark); read_committed (isolation 1)
//     reads stop at it and carry the aborted transactions they overlap
//     and LogStartOffset are reported for every partition.
//   - OFFSET_OUT_OF_RANGE for an offset below the log start or above the
//     log end; UNKNOWN_TOPIC_OR_PARTITION (v13+: UNKNOWN_TOPIC_ID) for
//     unknown partitions; FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a
//     stale or future CurrentLeaderEpoch (v9+).
//   - v16+: a consumer's NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
//     partition names the leader this node knows (CurrentLeader) and the
//     response lists its endpoint (NodeEndpoints), as KIP-951.
//   - Fetch sessions (KIP-227) are not kept: every response has session id
//     0, which tells clients to keep sending full fetches. A request naming
//     a session (id > 0, epoch ≠ -1) gets FETCH_SESSION_ID_NOT_FOUND.
//
//   - Follower fetches (ReplicaState.ID, or ReplicaID before v15, ≥ 0) on a
//     cluster node's internal listener are replication (see
//     partition/leader.go): records up to the log end, not the high
//     watermark; DivergingEpoch when the follower's last fetched epoch
//     ends earlier on the leader; the long poll wakes on appends. The
//     fetch tells the leader how far the follower has come. On a client
//     listener a replica id is ignored and the fetch is a consumer's, so
//     no client can pose as a follower (CVE-2018-1288).
//     A follower not in the ISR whose replica the topic's
//     leader.replication.throttled.replicas names on this node gets no
//     records while this node's leader.replication.throttled.rate is
//     spent (throttle.go, Kafka's shouldLeaderThrottle).
//
//   - Follower fetching (KIP-392): a consumer's fetch v11+ may be served
//     by any replica this node holds, a follower up to its own high
//     watermark (package partition's Reads). When the leader gets a fetch
//     naming the consumer's rack (v11+ Rack), it answers, as Kafka's
//     RackAwareReplicaSelector does, PreferredReadReplica = the in-sync
//     follower in that rack whose log holds the fetch offset (no records,
//     at once), unless the leader is in that rack itself or no follower
//     qualifies.

func (s *Server) handleFetch(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	if req.SessionID != 0 && req.SessionEpoch != -1 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	fol := s.follower(req)
	if req.MaxWaitMillis <= 0 {
		resp, _, _ := s.fetchOnce(req, fol, nil, zeroCopy(ctx))
		return resp, nil
	}
	until := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	// One channel for every partition read: each sends on it, without
	// blocking, at its next change (broker.Partition.NotifyEnd and
	// NotifyHighWatermark). The timer starts only when the fetch parks:
	// most fetches of a busy partition are answered at once.
	wake := make(chan struct{}, 1)
	var deadline *time.Timer
	for {
		resp, waited, done := s.fetchOnce(req, fol, wake, zeroCopy(ctx))
		if done || len(waited) == 0 {
			stopNotify(waited, wake)
			return resp, nil
		}
		resp.recycle() // not sent: a fresh read follows the wait
		if deadline == nil {
			deadline = time.NewTimer(time.Until(until))
			defer deadline.Stop()
		}
		select {
		case <-wake:
			stopNotify(waited, wake) // the others may not have sent yet
			select {                 // nor be heard twice if they have
			case <-wake:
			default:
			}
		case <-deadline.C:
			stopNotify(waited, wake)
			resp, _, _ := s.fetchOnce(req, fol, nil, zeroCopy(ctx))
			return resp, nil
		case <-ctx.Done():
			stopNotify(waited, wake)
			return nil, ctx.Err()
		}
	}
}

// stopNotify unregisters wake from the partitions a fetch waited on.
func stopNotify(waited []*broker.Partition, wake chan<- struct{}) {
	for _, p := range waited {
		p.StopNotify(wake)
	}
}

// fetchOnce builds a response from what is available now. Unless wake is
// nil it registers wake with each partition read (before reading it, so an
// append racing the read still wakes the waiter) and returns those
// partitions; and it reports whether the response should be sent at once
// (MinBytes reached, or an error to report).
func (s *Server) fetchOnce(req *kmsg.FetchRequest, fol *broker.FollowerFetch, wake chan<- struct{}, spans bool) (*fetchResponse, []*broker.Partition, bool) {
	resp := &fetchResponse{FetchResponse: req.ResponseKind().(*kmsg.FetchResponse), zeroCopy: spans}
	budget := int(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = int(^uint32(0) >> 1)
	}
	total, hasErr, redirected := 0, false, false
	// Sized once: a follower's fetch names every partition it follows
	// from this leader, and growing these by appending was a tenth of
	// a replicated cluster's CPU (the partition entries are large).
	nparts := 0
	for _, rt := range req.Topics {
		nparts += len(rt.Partitions)
	}
	var waited []*broker.Partition
	if wake != nil {
		waited = make([]*broker.Partition, 0, nparts)
	}
	resp.bufs = make([][]byte, 0, nparts)
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(rt.Partitions))
		t, terr := s.fetchTopic(req.Version, rt)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			if terr != nil {
				sp.ErrorCode = errorCode(terr)
			} else {
				p, err := t.Partition(broker.PartitionID(rp.Partition))
				if err != nil {
					sp.ErrorCode = errorCode(err)
				} else if fol != nil {
					if wake != nil {
						p.NotifyEnd(wake)
						waited = append(waited, p)
					}
					total += s.fetchForFollower(resp, p, *fol, rp, budget-total, total == 0, &sp)
				} else if preferredReplica(req, p, rp, &sp) {
					redirected = true
				} else {
					if wake != nil {
						p.NotifyHighWatermark(wake)
						waited = append(waited, p)
					}
					total += s.fetchPartition(resp, p, p.ConsumerReads(req.Version >= 11), rp, req.IsolationLevel == 1, budget-total, total == 0, &sp)
				}
			}
			hasErr = hasErr || sp.ErrorCode != 0 || sp.DivergingEpoch.EndOffset >= 0 // a follower truncates at once
			if sp.RecordBatches == nil {
				// Never null: librdkafka rejects a null record set
				// ("invalid MessageSetSize -1") in non-flexible versions.
				sp.RecordBatches = []byte{}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if hasErr && fol == nil {
		s.addFetchLeaderHints(resp.FetchResponse)
	}
	return resp, waited, hasErr || redirected || total >= int(req.MinBytes) || total > 0 && total >= budget
}

// preferredReplica answers a consumer's fetch of a partition this node
// leads with the replica in the consumer's rack it should read from
// (KIP-392): the partition's marks and PreferredReadReplica, no records.
// It reports false when the leader serves the fetch itself.
func preferredReplica(req *kmsg.FetchRequest, p *broker.Partition, rp kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition) bool {
	if req.Version < 11 || req.Rack == "" || checkLeaderEpoch(p, rp.CurrentLeaderEpoch) != 0 {
		return false
	}
	id := p.PreferredReadReplica(req.Rack, record.Offset(rp.FetchOffset))
	if id < 0 {
		return false
	}
	sp.HighWatermark, sp.LastStableOffset = int64(p.HighWatermark()), int64(p.LastStableOffset())
	sp.LogStartOffset = int64(p.LogStartOffset())
	sp.PreferredReadReplica = int32(id)
	return true
}

// follower returns the replica a fetch comes from, or nil for a
// consumer's fetch (any fetch on a client listener).
func (s *Server) follower(req *kmsg.FetchRequest) *broker.FollowerFetch {
	id, epoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		id, epoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	if id < 0 || !s.cfg.Internal {
		return nil
	}
	return &broker.FollowerFetch{Replica: broker.NodeID(id), BrokerEpoch: epoch}
}

// fetchForFollower fills sp for one partition of a follower's fetch and
// returns the bytes added.
func (s *Server) fetchForFollower(resp *fetchResponse, p *broker.Partition, f broker.FollowerFetch, rp kmsg.FetchRequestTopicPartition, remaining int, first bool, sp *kmsg.FetchResponseTopicPartition) int {
	if code := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); code != 0 {
		sp.ErrorCode = code
		return 0
	}
	limit := min(int(rp.PartitionMaxBytes), remaining)
	if limit <= 0 {
		if !first {
			return 0
		}
		limit = 1
	}
	rate, hold := s.leaderThrottle(p, f.Replica)
	if hold { // throttled and over the quota: no records this time
		sp.HighWatermark = int64(p.HighWatermark())
		sp.LastStableOffset, sp.LogStartOffset = sp.HighWatermark, int64(p.LogStartOffset())
		return 0
	}
	f.FetchOffset, f.LastFetchedEpoch, f.MaxBytes = record.Offset(rp.FetchOffset), record.Epoch(rp.LastFetchedEpoch), limit
	buf := getReadBuf(limit)
	res, err := p.ReadForFollower(buf, f)
	resp.keep(buf, res.Batches)
	sp.HighWatermark, sp.LastStableOffset = int64(res.HighWatermark), int64(res.HighWatermark)
	sp.LogStartOffset = int64(res.LogStartOffset)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		s.logUnknown("replica fetch", err)
		return 0
	}
	if d := res.Diverging; d != nil {
		sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = int32(d.Epoch), int64(d.End)
		return 0
	}
	if len(res.Batches) == 0 || !first && len(res.Batches) > limit {
		return 0
	}
	sp.RecordBatches = res.Batches
	if rate > 0 {
		s.b.LeaderQuota().Charge(rate, len(res.Batches))
	}
	return len(res.Batches)
}

func (s *Server) fetchTopic(version int16, rt kmsg.FetchRequestTopic) (*broker.Topic, error) {
	if version >= 13 {
		return s.b.TopicByID(broker.TopicID(rt.TopicID))
	}
	return s.b.Topic(rt.Topic)
}

// fetchPartition fills sp for one partition and returns the bytes added.
// remaining is what is left of the response budget; first says no data has
// been added yet, so one batch may exceed the limits.
func (s *Server) fetchPartition(resp *fetchResponse, p *broker.Partition, rd partition.Reads, rp kmsg.FetchRequestTopicPartition, committed bool, remaining int, first bool, sp *kmsg.FetchResponseTopicPartition) int {
	sp.HighWatermark = int64(p.HighWatermark())
	sp.LastStableOffset = sp.HighWatermark
	sp.LogStartOffset = int64(p.LogStartOffset())
	if code := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); code != 0 {
		sp.ErrorCode = code
		return 0
	}
	limit := min(int(rp.PartitionMaxBytes), remaining)
	if limit <= 0 {
		if !first {
			return 0
		}
		limit = 1 // KIP-74: at least one batch for the first partition with data
	}
	if resp.zeroCopy {
		if n, ok := s.fetchSpan(resp, p, rd, rp, committed, limit, first, sp); ok {
			return n
		}
	}
	buf := getReadBuf(limit)
	var res broker.ReadResult
	var err error
	if committed {
		var aborted []producer.AbortedTxn
		res, aborted, err = rd.CommittedInto(buf, record.Offset(rp.FetchOffset), limit)
		sp.AbortedTransactions = abortedTransactions(aborted)
	} else {
		res, err = rd.Into(buf, record.Offset(rp.FetchOffset), limit)
		res.LastStable = p.LastStableOffset()
	}
	resp.keep(buf, res.Batches)
	if !s.readMarks(sp, res.HighWatermark, res.LastStable, res.LogStartOffset, err) {
		return 0
	}
	if len(res.Batches) == 0 || !first && len(res.Batches) > limit {
		return 0 // (an oversized batch is only for the first partition)
	}
	sp.RecordBatches = res.Batches
	p.CountOut(res.Batches)
	return len(res.Batches)
}

// fetchSpan is fetchPartition's zero-copy path: the batches stay in the
// segment file and the connection's writer sends them from there (spans in
// splice.go). It reports false when the batches must be read instead
// (broker.ErrNoSpan) and nothing was filled in.
func (s *Server) fetchSpan(resp *fetchResponse, p *broker.Partition, rd partition.Reads, rp kmsg.FetchRequestTopicPartition, committed bool, limit int, first bool, sp *kmsg.FetchResponseTopicPartition) (int, bool) {
	res, err := rd.Span(record.Offset(rp.FetchOffset), limit, committed)
	if errors.Is(err, broker.ErrNoSpan) {
		return 0, false
	}
	if !s.readMarks(sp, res.HighWatermark, res.LastStable, res.LogStartOffset, err) {
		return 0, true
	}
	if res.Len == 0 {
		return 0, true
	}
	if !first && res.Len > limit {
		res.File.Close()
		return 0, true // (an oversized batch is only for the first partition)
	}
	sp.RecordBatches = resp.addSpan(res.Span)
	p.CountOutSpan(res)
	return res.Len, true
}

// readMarks fills in a partition's watermarks after a read and, when the
// read failed, its error code (the error is logged); it reports whether the
// read succeeded.
func (s *Server) readMarks(sp *kmsg.FetchResponseTopicPartition, hw, lastStable, logStart record.Offset, err error) bool {
	sp.HighWatermark = int64(hw)
	sp.LastStableOffset = int64(min(lastStable, hw))
	sp.LogStartOffset = int64(logStart)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		s.logUnknown("fetch", err)
		return false
	}
	return true
}

// fetchResponse is a FetchResponse plus what its record sets live in: the
// pooled read buffers of those read, and the segment-file spans of those to
// be sent from the file (each partition's RecordBatches is then the span's
// marker, spanMarker). The connection's writer recycles both once the
// response is written (never earlier: the writes read them).
type fetchResponse struct {
	*kmsg.FetchResponse
	bufs  [][]byte
	spans []partlog.Span
	// zeroCopy: the connection sends spans with sendfile (zeroCopyTo), so
	// a consumer's batches may stay in the segment files.
	zeroCopy bool
}

// keep records the buffer a read used, whichever of the pooled buffer or a
// larger one the log allocated instead.
func (r *fetchResponse) keep(pooled, got []byte) {
	if cap(got) > 0 && cap(got) != cap(pooled) {
		putReadBuf(pooled)
		pooled = got
	}
	r.bufs = append(r.bufs, pooled)
}

// addSpan takes sp (and its descriptor) into the response and returns the
// marker that stands for it in RecordBatches.
func (r *fetchResponse) addSpan(sp partlog.Span) []byte {
	r.spans = append(r.spans, sp)
	return spanMarker(len(r.spans) - 1)
}

// recordBytes is the size of the record sets the response carries, spans
// counted at their length (a consumer's fetch quota counts these bytes).
func (r *fetchResponse) recordBytes() int {
	n := 0
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if k, ok := spanIndex(p.RecordBatches); ok && k < len(r.spans) {
				n += r.spans[k].Len
			} else {
				n += len(p.RecordBatches)
			}
		}
	}
	return n
}

// recycle returns the response's buffers to the pool and closes its spans'
// descriptors; the response must not be used afterwards.
func (r *fetchResponse) recycle() {
	for _, b := range r.bufs {
		putReadBuf(b)
	}
	r.bufs = nil
	for _, sp := range r.spans {
		sp.File.Close()
	}
	r.spans = nil
}

// Read buffers are pooled: one fetch reads up to a partition's max bytes (1
// MiB for most clients), and allocating (and zeroing) that afresh for every
// partition of every fetch is most of what consuming costs the server.
const (
	readBufSize   = 1 << 20
	maxPooledRead = 8 << 20
)

var readBufs sync.Pool

func getReadBuf(n int) []byte {
	if v, ok := readBufs.Get().(*[]byte); ok && cap(*v) >= n {
		return (*v)[:0]
	}
	return make([]byte, 0, max(n, readBufSize))
}

func putReadBuf(b []byte) {
	if cap(b) >= readBufSize && cap(b) <= maxPooledRead {
		b = b[:0]
		readBufs.Put(&b)
	}
}

// abortedTransactions is Fetch's AbortedTransactions list (nil, not
// empty, when there are none: the field is nullable).
func abortedTransactions(aborted []producer.AbortedTxn) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	if len(aborted) == 0 {
		return nil
	}
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(aborted))
	for i, a := range aborted {
		out[i] = kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		out[i].ProducerID, out[i].FirstOffset = int64(a.ProducerID), int64(a.FirstOffset)
	}
	return out
}
