package kafka

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// deferred is a handler's answer that is not complete yet: a produce whose
// batches are appended but wait for their followers or their fsync. The
// connection's handler goes on to its next request while the writer waits
// for it, so one connection's acks=all produces are appended back to back
// and committed together, instead of one replication round trip each
// (Kafka serves one request of a connection at a time; Redpanda pipelines
// them like this). Responses still go out in request order, and wait must
// not touch the request, whose frame is freed once the handler returns.
type deferred struct {
	kmsg.Response // the response wait fills
	wait          func() kmsg.Response
}

// later is an outbound's encoding once its deferred answer is complete;
// the writer runs it in the response's turn.
type later func() outbound

// deferredOutbound is the outbound of a deferred answer to req: post (the
// authorizer's additions) and the encoding run once d is complete, and the
// request's latency is observed then.
func (c *conn) deferredOutbound(req *request, d *deferred, post func(kmsg.Response), start time.Time) outbound {
	key, correlationID := req.key, req.correlationID
	return outbound{later: func() (out outbound) {
		defer func() {
			if r := recover(); r != nil {
				c.s.logger.Error("kafka: completing a response panicked", "api", kmsg.NameForKey(key),
					"remote", c.nc.RemoteAddr().String(), "panic", r, "stack", string(debug.Stack()))
				c.s.observe(key, start, fmt.Errorf("panic: %v", r))
				out = outbound{} // nothing is written; the connection closes
				c.cancel()
				c.nc.Close()
			}
		}()
		resp := d.wait()
		if post != nil {
			post(resp)
		}
		c.s.observe(key, start, nil)
		return encodeResponse(correlationID, resp)
	}}
}
