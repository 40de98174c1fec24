package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/wire"
)

// Envelope: v0, on a cluster node's internal listener only (KIP-590).
//
// Behavior:
//   - A cluster node that does not lead the metadata quorum forwards the
//     admin requests that change metadata — CreateTopics, DeleteTopics,
//     CreatePartitions, AlterConfigs, IncrementalAlterConfigs — to the
//     controller's internal listener, wrapped in an Envelope; the
//     controller handles the inner request as its own and returns the
//     inner response in ResponseData. The forwarding node answers its
//     client only once its own metadata holds what the controller had
//     applied (a read barrier), so the client reads its write back there.
//   - A node that is not (or no longer) the controller answers
//     NOT_CONTROLLER; the forwarder finds the new one and retries until
//     the client's timeout (30 s for requests without one). Past it, the
//     node handles the request itself, committing its records through the
//     controller as auto-creation does, so each topic gets its own error
//     (REQUEST_TIMED_OUT while there is no controller). A retried create
//     may find TOPIC_ALREADY_EXISTS, as in Kafka.
//   - An inner request that does not parse, or is not one of the five, is
//     INVALID_REQUEST. RequestPrincipal is not used: Strand has no ACLs yet.
//   - On a client listener Envelope is neither advertised nor served (the
//     connection is closed).

const apiKeyEnvelope = 58

// forwardable are the requests a non-controller forwards.
var forwardable = map[int16]bool{19: true, 20: true, 33: true, 37: true, 44: true}

func (s *Server) handleEnvelope(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.EnvelopeRequest)
	resp := req.ResponseKind().(*kmsg.EnvelopeResponse)
	if !s.cfg.Internal {
		return nil, errors.New("kafka: Envelope on a client listener")
	}
	if !s.b.IsController() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	inner, err := parseRequest(req.RequestData)
	if err != nil || inner.kreq == nil || !forwardable[inner.key] {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	out, err := apis[inner.key].handle(s, ctx, inner.kreq)
	if err != nil || out == nil {
		s.logger.Warn("kafka: a forwarded request failed", "api", kmsg.NameForKey(inner.key), "err", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	resp.ResponseData = appendResponse(nil, inner.correlationID, out)[4:]
	return resp, nil
}

// forward sends a metadata-changing admin request to the controller when
// this node is a cluster member that does not lead the quorum; ok is false
// when the request is to be handled here.
func (s *Server) forward(ctx context.Context, kreq kmsg.Request, timeoutMillis int32) (resp kmsg.Response, ok bool, err error) {
	if !s.b.Clustered() || s.b.IsController() {
		return nil, false, nil
	}
	timeout := 30 * time.Second
	if timeoutMillis > 0 {
		timeout = time.Duration(timeoutMillis) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = wire.AppendRequest(nil, kreq, 1, "strand-forward")[4:]
	if ci := clientFrom(ctx); ci.host != "" {
		env.ClientHostAddress = []byte(ci.host)
	}
	var last error
	for ctx.Err() == nil {
		id, addr, err := s.b.ControllerEndpoint()
		switch {
		case err == nil && id == s.b.NodeID():
			return nil, false, nil // this node became the controller
		case err == nil:
			var er *kmsg.EnvelopeResponse
			attempt, stop := s.whileController(ctx, id)
			er, err = roundTrip(attempt, s.b.Dialer(), addr, env)
			stop()
			if err == nil && er.ErrorCode == 0 {
				return s.unwrap(ctx, kreq, er.ResponseData)
			}
			if err == nil {
				err = fmt.Errorf("controller %d: %w", id, kerr.ErrorForCode(er.ErrorCode))
			}
		}
		last = err
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	// Handled here instead: its metadata records go to the controller the
	// way auto-creation's do, and each topic gets its own error.
	s.logger.Warn("kafka: forwarding to the controller failed; handling the request here", "api", kmsg.NameForKey(kreq.Key()), "err", last)
	return nil, false, nil
}

// whileController returns a context that ends with ctx or once the
// quorum's leader is no longer id. A controller cut off from the network
// (not crashed: nothing resets the connection) answers nothing until the
// request times out; Kafka's brokers move forwarded requests to a new
// controller as soon as one is elected, and so does this.
func (s *Server) whileController(ctx context.Context, id broker.NodeID) (context.Context, context.CancelFunc) {
	attempt, cancel := context.WithCancel(ctx)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-attempt.Done():
				return
			case <-tick.C:
			}
			if now, _, err := s.b.ControllerEndpoint(); err == nil && now != id {
				cancel()
				return
			}
		}
	}()
	return attempt, cancel
}

// unwrap decodes the controller's inner response and waits until this
// node's metadata holds what the controller had applied.
func (s *Server) unwrap(ctx context.Context, kreq kmsg.Request, data []byte) (kmsg.Response, bool, error) {
	resp := kreq.ResponseKind()
	if len(data) < 4 {
		return nil, true, fmt.Errorf("kafka: the controller's forwarded response is %d bytes", len(data))
	}
	body := data[4:]
	if resp.IsFlexible() {
		var err error
		if body, err = wire.SkipTags(body); err != nil {
			return nil, true, fmt.Errorf("kafka: the controller's forwarded response: %w", err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, true, fmt.Errorf("kafka: the controller's forwarded response: %w", err)
	}
	deadline, _ := ctx.Deadline()
	if err := s.b.SyncWithController(max(time.Until(deadline), time.Second)); err != nil {
		s.logger.Warn("kafka: this node's metadata has not caught up with a forwarded change", "err", err)
	}
	return resp, true, nil
}

// roundTrip sends one Envelope to addr on a fresh connection and reads
// its response.
func roundTrip(ctx context.Context, d wire.Dialer, addr string, req *kmsg.EnvelopeRequest) (*kmsg.EnvelopeResponse, error) {
	c, err := d.Dial(ctx, addr, "strand-forward")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	defer context.AfterFunc(ctx, func() { c.Close() })() // ctx ending fails a request in flight
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	resp, err := c.RoundTrip(req, deadline)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.EnvelopeResponse), nil
}
