package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
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
//     INVALID_REQUEST.
//   - The forwarding node puts its client's principal in RequestPrincipal,
//     serialized as Kafka's DefaultKafkaPrincipalBuilder does (a
//     DefaultPrincipalData, prefixed by its version, 0), and the client's
//     IP address in ClientHostAddress (4 or 16 bytes, Java's
//     InetAddress.getAddress).
//   - With an authorizer, the controller authorizes the inner request as
//     RequestPrincipal from ClientHostAddress, through the rules every
//     client request passes (authz.go): a topic that principal may not
//     delete answers TOPIC_AUTHORIZATION_FAILED, the others are deleted.
//     A RequestPrincipal that is missing or does not decode answers
//     PRINCIPAL_DESERIALIZATION_FAILURE, a ClientHostAddress that is not an
//     address INVALID_REQUEST (as Kafka's EnvelopeUtils). The sender needs
//     ClusterAction, which a node holds implicitly (node.go). Without an
//     authorizer neither field is read.
//   - An Envelope error other than NOT_CONTROLLER is final: the forwarding
//     node answers its client UNKNOWN_SERVER_ERROR (Kafka's
//     ForwardingManager), rather than retry a refusal or handle the request
//     itself.
//   - On a client listener Envelope is neither advertised nor served (the
//     connection is closed, before authorization). The internal listener
//     serves only what nodes send each other (nodeAPIs, dispatch.go): an
//     admin request sent there bare closes the connection, so the only way
//     in for one is an Envelope and its principal.

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
	var client clientInfo
	if s.cfg.Authorizer != nil {
		p, err := decodePrincipal(req.RequestPrincipal)
		if err != nil {
			s.logger.Warn("kafka: a forwarded request's principal does not decode", "err", err)
			resp.ErrorCode = kerr.PrincipalDeserializationFailure.Code
			return resp, nil
		}
		ip := net.IP(req.ClientHostAddress)
		if len(ip) != net.IPv4len && len(ip) != net.IPv6len {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		client = clientInfo{ip: ip.String(), principal: p}
	}
	inner, err := parseRequest(req.RequestData)
	if err != nil || inner.kreq == nil || !forwardable[inner.key] {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	out, err := s.handleForwarded(ctx, inner, client)
	if err != nil || out == nil {
		s.logger.Warn("kafka: a forwarded request failed", "api", kmsg.NameForKey(inner.key), "err", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	resp.ResponseData = appendResponse(nil, inner.correlationID, out)[4:]
	return resp, nil
}

// handleForwarded runs a forwarded request: authorized first as client's
// principal and IP when there is an authorizer, as the client listener
// would.
func (s *Server) handleForwarded(ctx context.Context, inner *request, client clientInfo) (kmsg.Response, error) {
	var post func(kmsg.Response)
	if s.cfg.Authorizer != nil {
		early, p, err := s.authorizeAs(client.principal, client.ip, inner)
		if err != nil || early != nil {
			return early, err
		}
		post = p
		// Should this node have to forward it again (it lost the quorum's
		// lead meanwhile), the client's principal and IP go along.
		ctx = context.WithValue(ctx, clientKey{}, client)
	}
	out, err := apis[inner.key].handle(s, ctx, inner.kreq)
	if d, ok := out.(*deferred); ok { // answered whole: an envelope carries one response
		out = d.wait()
	}
	if err == nil && out != nil && post != nil {
		post(out)
	}
	return out, err
}

// encodePrincipal serializes p as Kafka's DefaultKafkaPrincipalBuilder
// does for an Envelope (MessageUtil.toVersionPrefixedBytes of a
// DefaultPrincipalData): the version (int16, 0), then the flexible v0
// body. Strand has no delegation tokens, so TokenAuthenticated is false.
//
//	00 00 | 05 'U' 's' 'e' 'r' | 06 'a' 'l' 'i' 'c' 'e' | 00 | 00
//	version  type (compact)       name (compact)           token tags
func encodePrincipal(p acl.Principal) []byte {
	typ, name, _ := strings.Cut(string(p), ":")
	d := kmsg.NewDefaultPrincipalData()
	d.Version, d.Type, d.Name = 0, typ, name
	return d.AppendTo(nil)
}

// decodePrincipal reads an Envelope's RequestPrincipal: only version 0, as
// Kafka's deserialize; a missing principal is an error too, and (stricter
// than Kafka, which takes any strings) so is an empty type or name, which
// no authenticated client has. TokenAuthenticated changes no ACL decision.
func decodePrincipal(b []byte) (acl.Principal, error) {
	if b == nil {
		return "", errors.New("kafka: the Envelope carries no RequestPrincipal")
	}
	var d kmsg.DefaultPrincipalData
	if err := d.ReadFrom(b); err != nil {
		return "", fmt.Errorf("kafka: RequestPrincipal: %w", err)
	}
	if d.Version != 0 {
		return "", fmt.Errorf("kafka: RequestPrincipal version %d, want 0", d.Version)
	}
	if d.Type == "" || d.Name == "" {
		return "", fmt.Errorf("kafka: RequestPrincipal %q:%q has an empty part", d.Type, d.Name)
	}
	return acl.Principal(d.Type + ":" + d.Name), nil
}

// clientAddress is an IP address's bytes as Java's
// InetAddress.getAddress gives them: 4 for IPv4, 16 for IPv6; nil when ip
// does not parse.
func clientAddress(ip string) []byte {
	a := net.ParseIP(ip)
	if v4 := a.To4(); v4 != nil {
		return v4
	}
	return a
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
	ci := clientFrom(ctx)
	env.ClientHostAddress = clientAddress(ci.ip)
	if ci.principal != "" {
		env.RequestPrincipal = encodePrincipal(ci.principal)
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
			er, err = roundTrip(attempt, s.b.Dialer(), int32(id), addr, env)
			stop()
			if err == nil && er.ErrorCode == 0 {
				return s.unwrap(ctx, kreq, er.ResponseData)
			}
			if err == nil && er.ErrorCode != kerr.NotController.Code {
				// A refusal (CLUSTER_AUTHORIZATION_FAILED,
				// PRINCIPAL_DESERIALIZATION_FAILURE, …) means a
				// misconfigured cluster: retrying would not change it.
				s.logger.Warn("kafka: the controller refused a forwarded request", "api", kmsg.NameForKey(kreq.Key()),
					"controller", id, "err", kerr.ErrorForCode(er.ErrorCode))
				return failAll(kreq, kerr.UnknownServerError.Code), true, nil
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

// roundTrip sends one Envelope to the controller's internal listener at
// addr on a fresh connection (with inter-node TLS, refused unless the peer
// is that node) and reads its response.
func roundTrip(ctx context.Context, d wire.Dialer, controller int32, addr string, req *kmsg.EnvelopeRequest) (*kmsg.EnvelopeResponse, error) {
	c, err := d.DialNode(ctx, controller, addr, "strand-forward")
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
