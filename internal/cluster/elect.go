package cluster

import (
	"errors"
	"fmt"
	"slices"
)

// Elections asked for by an operator (ElectLeaders) and the controller's
// own preferred-leader balancing. The preferred leader is a partition's
// first replica: placement spreads first replicas evenly, so leading from
// them spreads the load; failovers move leadership away and these bring it
// back (REPLICATION.md §2.6).

// ElectionType is ElectLeaders' election type.
type ElectionType int8

// Kafka's election types.
const (
	ElectPreferred ElectionType = 0
	ElectUnclean   ElectionType = 1
)

// Election errors, as ElectLeaders reports them per partition.
var (
	ErrElectionNotNeeded           = errors.New("cluster: election not needed")
	ErrPreferredLeaderNotAvailable = errors.New("cluster: preferred leader not available")
	ErrEligibleLeadersNotAvailable = errors.New("cluster: eligible leaders not available")
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     TopicID `json:"topic"`
	Partition int32   `json:"partition"`
}

// ElectLeaders asks the controller for elections.
type ElectLeaders struct {
	Type ElectionType `json:"type"`
	// Partitions to elect for; nil: every partition, and then those that
	// need no election are left out of the results (as Kafka does).
	Partitions []TopicPartition `json:"partitions,omitempty"`
}

// PartitionResult is one partition's outcome of a controller request:
// Code "" (done) or an rpcCodes key, Err its message.
type PartitionResult struct {
	TopicPartition
	Code string `json:"code,omitempty"`
	Err  string `json:"err,omitempty"`
}

// Error returns the result's error, nil when the election happened.
func (r PartitionResult) Error() error {
	if r.Code == "" {
		return nil
	}
	return RPCError(r.Code, r.Err)
}

// electionFor is the change that an election of type typ makes to
// partition p of topic t, or why there is none.
func electionFor(img *Image, rules Rules, typ ElectionType, t TopicID, p int32) (PartitionChange, error) {
	reg, ok := img.Partition(t, p)
	if !ok {
		return PartitionChange{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t, p)
	}
	ch := PartitionChange{TopicID: t, PartitionID: p, ExpectedPartitionEpoch: reg.PartitionEpoch, Leader: LeaderUnchanged}
	switch typ {
	case ElectPreferred:
		pref := reg.Replicas[0]
		fromELR := len(reg.ISR) == 0 && slices.Contains(reg.ELR, pref)
		switch {
		case reg.Leader == pref:
			return ch, fmt.Errorf("%w: node %d, the preferred replica, leads %s-%d", ErrElectionNotNeeded, pref, t, p)
		case !slices.Contains(reg.ISR, pref) && !fromELR || !acceptable(img, pref):
			return ch, fmt.Errorf("%w: node %d, the preferred replica of %s-%d, is not a live member of its ISR %v", ErrPreferredLeaderNotAvailable, pref, t, p, reg.ISR)
		}
		ch.Leader = pref
		if fromELR { // the ISR is empty: a clean election from the ELR
			ch.ISR, ch.ELR = []NodeID{pref}, &ELRState{ELR: nonEmpty(without(reg.ELR, pref))}
		} else if len(reg.LastKnownELR) > 0 {
			ch.ELR = &ELRState{ELR: reg.ELR}
		}
		return ch, nil
	case ElectUnclean:
		if reg.Leader != NoLeader {
			return ch, fmt.Errorf("%w: %s-%d has leader %d", ErrElectionNotNeeded, t, p, reg.Leader)
		}
		// An ISR or ELR member back is elected cleanly; else the last
		// known leader, else any live replica.
		ch, _ := buildChange(img, rules, t, p, reg, changeSpec{isr: reg.ISR, crashed: NoLeader, unclean: true})
		if ch.Leader == LeaderUnchanged || ch.Leader == NoLeader {
			return ch, fmt.Errorf("%w: no replica of %s-%d is live", ErrEligibleLeadersNotAvailable, t, p)
		}
		return ch, nil
	}
	return ch, fmt.Errorf("%w: election type %d", ErrInvalidRequest, typ)
}

// Elections computes the changes and results of req against img.
func Elections(img *Image, rules Rules, req ElectLeaders) ([]Record, []PartitionResult) {
	var recs []Record
	var results []PartitionResult
	one := func(t TopicID, p int32) {
		ch, err := electionFor(img, rules, req.Type, t, p)
		tp := TopicPartition{Topic: t, Partition: p}
		switch {
		case err == nil:
			recs = append(recs, ch)
			results = append(results, PartitionResult{TopicPartition: tp})
		case req.Partitions == nil && errors.Is(err, ErrElectionNotNeeded):
		default:
			f := RPCFailure(err)
			results = append(results, PartitionResult{TopicPartition: tp, Code: f.Code, Err: f.Err})
		}
	}
	if req.Partitions == nil {
		img.EachPartition(func(t TopicID, p int32, _ PartitionReg) { one(t, p) })
	} else {
		for _, tp := range req.Partitions {
			one(tp.Topic, tp.Partition)
		}
	}
	return recs, results
}

// Imbalanced returns the elections that move leadership back to preferred
// replicas able to take it, at most max of them.
func Imbalanced(img *Image, rules Rules, max int) []Record {
	recs, _ := Elections(img, rules, ElectLeaders{Type: ElectPreferred})
	if len(recs) > max {
		recs = recs[:max]
	}
	return recs
}
