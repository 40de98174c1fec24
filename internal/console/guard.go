package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// Actions change the broker (create or delete a topic, edit its configs,
// produce, reset or delete a group, redrive a DLQ). A console action is
// allowed only when all of these hold (checkAction), and, with an
// authorizer, the principal may do it (authorizeAction, authz.go):
//
//   - the method is POST (the mux routes only POST to an action, so a link,
//     an image or a prefetch cannot act);
//   - the client is on this machine (its address is loopback): exposing the
//     console on a network (--console-listen 0.0.0.0:…) exposes reading, never
//     changing;
//   - the request is not cross-site: Sec-Fetch-Site, when the browser sends
//     it, is same-origin, and Origin, when sent, names the Host asked for — a
//     page on another site cannot make a local browser act (CSRF);
//   - the form carries this process's CSRF token (32 random bytes made at
//     New, in a hidden field of every action form; compared in constant
//     time), so a request forged by a client that strips those headers still
//     fails, and a form from before a restart is refused.
//
// Forms are shown only to loopback clients; HostGuard (hosts.go) still
// stands in front against DNS rebinding.

// errForbidden marks an action refused by checkAction: HTTP 403.
var errForbidden = errors.New("forbidden")

// errConflict marks an action the broker refused in its current state
// (a topic that exists, a group with members): HTTP 409.
var errConflict = errors.New("conflict")

// maxActionBody bounds an action's form (a produced test record's value
// included).
const maxActionBody = 4 << 20

func newToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("console: no randomness for the CSRF token: %v", err)) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b)
}

// loopback says whether the request's client is on this machine.
func loopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkAction refuses an action that fails any rule above; it parses the
// form.
func (c *Console) checkAction(w http.ResponseWriter, r *http.Request) error {
	if !loopback(r) {
		return fmt.Errorf("%w: actions are allowed only from this machine (a loopback client), not from %s", errForbidden, r.RemoteAddr)
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return fmt.Errorf("%w: a %s request cannot act (CSRF guard); use the console's own forms", errForbidden, s)
	}
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			return fmt.Errorf("%w: origin %q is not this console (%s) (CSRF guard)", errForbidden, o, r.Host)
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxActionBody)
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	if got := r.PostForm.Get("csrf"); subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) != 1 {
		return fmt.Errorf("%w: missing or stale CSRF token: reload the page and submit its form again", errForbidden)
	}
	return nil
}

// action serves an action at "POST path": the guard, then do, whose error
// becomes an error page.
func (c *Console) action(path string, do func(w http.ResponseWriter, r *http.Request) error) {
	c.mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		err := c.checkAction(w, r)
		if err == nil {
			err = c.authorizeAction(r)
		}
		if err == nil {
			err = do(w, r)
		}
		if err != nil {
			c.fail(w, r, err, false)
		}
	})
}
