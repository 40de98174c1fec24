package share

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Share-session errors (KIP-932's incremental share fetch sessions).
var (
	ErrSessionNotFound = errors.New("share: share session not found")     // SHARE_SESSION_NOT_FOUND
	ErrSessionEpoch    = errors.New("share: invalid share session epoch") // INVALID_SHARE_SESSION_EPOCH
)

// The share-session epochs with a meaning of their own.
const (
	SessionOpen  int32 = 0  // open a session (a fetch; no acknowledgements)
	SessionFinal int32 = -1 // close the session after this request
)

// Sessions are the share sessions of one node: for each (group, member),
// the partitions its fetches cover and the epoch its next request must
// carry. Safe for concurrent use.
type Sessions struct {
	mu sync.Mutex
	m  map[sessionKey]*session
}

type sessionKey struct{ group, member string }

type session struct {
	epoch int32
	parts []TopicPartition
	owner any // the connection that opened it
}

// NewSessions returns an empty session table.
func NewSessions() *Sessions { return &Sessions{m: map[sessionKey]*session{}} }

// Use checks a request's session epoch and applies its partition changes:
// epoch 0 opens a new session (replacing one the member had), -1 closes
// it, and n > 0 must be the session's current epoch, which then moves on
// (wrapping to 1). add joins partitions to the session, forget removes
// them, in that order. It returns the session's partitions after the
// change (for -1, before closing).
//
// owner is the connection the request came on; a session opened on it is
// closed by DropOwner when the connection closes (KIP-932 ties a share
// session to its connection).
func (s *Sessions) Use(group, member string, epoch int32, add, forget []TopicPartition, owner any) ([]TopicPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sessionKey{group, member}
	cur := s.m[k]
	switch {
	case epoch == SessionOpen:
		cur = &session{owner: owner}
		s.m[k] = cur
	case cur == nil:
		return nil, fmt.Errorf("%w: group %s member %s", ErrSessionNotFound, group, member)
	case epoch == SessionFinal:
		delete(s.m, k)
	case epoch != cur.epoch:
		return nil, fmt.Errorf("%w: %d, the session is at %d", ErrSessionEpoch, epoch, cur.epoch)
	}
	for _, tp := range add {
		if !slices.ContainsFunc(cur.parts, func(x TopicPartition) bool { return x.TopicID == tp.TopicID && x.Partition == tp.Partition }) {
			cur.parts = append(cur.parts, tp)
		}
	}
	for _, tp := range forget {
		cur.parts = slices.DeleteFunc(cur.parts, func(x TopicPartition) bool { return x.TopicID == tp.TopicID && x.Partition == tp.Partition })
	}
	if epoch != SessionFinal {
		if cur.epoch == math.MaxInt32 {
			cur.epoch = 1
		} else {
			cur.epoch++
		}
	}
	return slices.Clone(cur.parts), nil
}

// Check validates an epoch without changing anything.
func (s *Sessions) Check(group, member string, epoch int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.m[sessionKey{group, member}]
	switch {
	case epoch == SessionOpen:
		return nil
	case cur == nil:
		return fmt.Errorf("%w: group %s member %s", ErrSessionNotFound, group, member)
	case epoch != SessionFinal && epoch != cur.epoch:
		return fmt.Errorf("%w: %d, the session is at %d", ErrSessionEpoch, epoch, cur.epoch)
	}
	return nil
}

// Drop removes every session of a member (it left the group).
func (s *Sessions) Drop(group, member string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sessionKey{group, member})
}

// SessionMember names the member a share session belongs to.
type SessionMember struct{ Group, ID string }

// DropOwner closes every session opened on connection owner and returns
// their members, whose acquired records the caller releases.
func (s *Sessions) DropOwner(owner any) []SessionMember {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SessionMember
	for k, cur := range s.m {
		if cur.owner == owner {
			delete(s.m, k)
			out = append(out, SessionMember{Group: k.group, ID: k.member})
		}
	}
	return out
}
