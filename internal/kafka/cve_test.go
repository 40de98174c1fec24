package kafka

// The CVE and hostile-input regressions of issue 16 (TXN-848 D.5), one
// named test per row; docs/SECURITY.md lists them. Kafka's behaviour is
// the specification of each.

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/sasl"
	"github.com/strandmq/strand/internal/testcert"
)

// saslStart sends SaslHandshake v1 for mech and fails the test unless the
// broker accepts it.
func saslStart(t *testing.T, c *rawClient, mech string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech
	wantCode(t, "handshake "+mech, c.do(hs, 1).(*kmsg.SASLHandshakeResponse).ErrorCode, nil)
}

// saslStep sends one SaslAuthenticate v2 token.
func saslStep(c *rawClient, token []byte) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = token
	return c.do(auth, 2).(*kmsg.SASLAuthenticateResponse)
}

// plainLogin authenticates c with SASL PLAIN as user, failing the test if
// it does not succeed.
func plainLogin(t *testing.T, c *rawClient, user, pass string) {
	t.Helper()
	saslStart(t, c, sasl.Plain)
	wantCode(t, "PLAIN login "+user, saslStep(c, []byte("\x00"+user+"\x00"+pass)).ErrorCode, nil)
}

// expectClosedSilently asserts the server closes c without writing another
// byte: whatever was pipelined after the failure got no answer.
func expectClosedSilently(t *testing.T, c *rawClient, what string) {
	t.Helper()
	switch n, open := firstBytes(c.conn, 30*time.Second); {
	case n != 0:
		t.Fatalf("%s: %d more bytes after the failure; want the connection closed without an answer", what, n)
	case open:
		t.Fatalf("%s: the connection stayed open", what)
	}
}

// firstBytes waits up to d for the peer to write or close: n is what one
// read got (0 when it closed), open whether it did neither in time.
func firstBytes(c net.Conn, d time.Duration) (n int, open bool) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	var ne net.Error
	return n, n == 0 && errors.As(err, &ne) && ne.Timeout()
}

// scramClient is a hand-rolled SCRAM-SHA-256 client (RFC 5802) that lets a
// test choose the GS2 header and the nonce of its final message while
// still computing a valid proof, so the server's refusal can only come
// from the check under test.
type scramRaw struct {
	user, pass  string
	gs2         string // "n,," by default
	cnonce      string
	clientFirst string // bare
	serverFirst string
	snonce      string // the whole nonce the server answered (cnonce + server part)
	salt        []byte
	iterations  int
}

func (s *scramRaw) first() []byte {
	if s.gs2 == "" {
		s.gs2 = "n,,"
	}
	s.cnonce = base64.RawStdEncoding.EncodeToString(randBytes(18))
	s.clientFirst = "n=" + s.user + ",r=" + s.cnonce
	return []byte(s.gs2 + s.clientFirst)
}

func (s *scramRaw) readServerFirst(t *testing.T, msg []byte) {
	t.Helper()
	s.serverFirst = string(msg)
	for _, kv := range strings.Split(s.serverFirst, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "r":
			s.snonce = v
		case "s":
			var err error
			if s.salt, err = base64.StdEncoding.DecodeString(v); err != nil {
				t.Fatal(err)
			}
		case "i":
			s.iterations, _ = strconv.Atoi(v)
		}
	}
	if !strings.HasPrefix(s.snonce, s.cnonce) || len(s.snonce) == len(s.cnonce) || s.iterations < 4096 {
		t.Fatalf("server-first %q", s.serverFirst)
	}
}

// final is the client-final message for nonce, with a proof valid for it.
func (s *scramRaw) final(t *testing.T, nonce string) []byte {
	t.Helper()
	salted, err := pbkdf2.Key(sha256.New, s.pass, s.salt, s.iterations, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	hm := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := hm(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte(s.gs2)) + ",r=" + nonce
	sig := hm(stored[:], s.clientFirst+","+s.serverFirst+","+withoutProof)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof))
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// createACLReq is a CreateAcls v2 of one Allow ACL: what only a principal
// with Cluster:Alter (here the super user admin) may do.
func createACLReq() *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "anything", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host = "User:alice", "*"
	cr.Operation, cr.PermissionType = kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
	req.Creations = append(req.Creations, cr)
	return req
}

// TestCVE_2017_12610_AuthzidImpersonation: a SASL authorization id other
// than the authenticated user is refused, as Kafka does since the CVE's
// fix (PLAIN: "authzid must equal username"; SCRAM: the a= of the GS2
// header must name the user): SASL_AUTHENTICATION_FAILED, the connection
// closed, and a request pipelined behind the attempt (a CreateAcls only
// the super user admin may make) never answered. The controls: alice's own
// login works and her CreateAcls is CLUSTER_AUTHORIZATION_FAILED, and
// admin's is allowed — so a session that became admin would show.
func TestCVE_2017_12610_AuthzidImpersonation(t *testing.T) {
	t.Parallel()
	ts := secureServer(t, broker.Config{}, nil)

	c := dial(t, ts.addr)
	plainLogin(t, c, "alice", "alicepw")
	if code := c.do(createACLReq(), 2).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's CreateAcls: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	c = dial(t, ts.addr)
	saslStart(t, c, sasl.Plain)
	wantCode(t, "PLAIN with authzid = authcid", saslStep(c, []byte("alice\x00alice\x00alicepw")).ErrorCode, nil)
	c = dial(t, ts.addr)
	plainLogin(t, c, "admin", "adminpw")
	wantCode(t, "admin's CreateAcls", c.do(createACLReq(), 2).(*kmsg.CreateACLsResponse).Results[0].ErrorCode, nil)

	attempt := func(name, mech string, token []byte) {
		t.Helper()
		c := dial(t, ts.addr)
		saslStart(t, c, mech)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = token
		corr := c.send(auth, 2)
		c.send(createACLReq(), 2) // pipelined: must never be served
		r := c.recv(auth, corr).(*kmsg.SASLAuthenticateResponse)
		wantCode(t, name, r.ErrorCode, kerr.SaslAuthenticationFailed)
		expectClosedSilently(t, c, name)
	}
	attempt("PLAIN admin\\0alice\\0alicepw", sasl.Plain, []byte("admin\x00alice\x00alicepw"))
	attempt("PLAIN admin\\0alice\\0(empty)", sasl.Plain, []byte("admin\x00alice\x00"))
	for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		s := &scramRaw{user: "alice", pass: "alicepw", gs2: "n,a=admin,"}
		attempt(mech+" n,a=admin,n=alice", mech, s.first())
	}

	// SCRAM with a=alice for alice is allowed, so the refusal above is the
	// authzid check's and not a malformed header's.
	c = dial(t, ts.addr)
	saslStart(t, c, sasl.ScramSHA256)
	s := &scramRaw{user: "alice", pass: "alicepw", gs2: "n,a=alice,"}
	r := saslStep(c, s.first())
	wantCode(t, "SCRAM client-first with a=alice", r.ErrorCode, nil)
	s.readServerFirst(t, r.SASLAuthBytes)
	wantCode(t, "SCRAM client-final with a=alice", saslStep(c, s.final(t, s.snonce)).ErrorCode, nil)
	if code := c.do(createACLReq(), 2).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice (authzid alice) CreateAcls: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
}

// TestCVE_2024_56128_ScramNonceMismatch: a SCRAM client-final whose nonce
// is not the one the server-first gave (client nonce + server nonce) is
// SASL_AUTHENTICATION_FAILED and the connection closes unauthenticated,
// even though the proof is valid for the message sent. Kafka's fix checks
// that the final nonce ends with the server-first's; Strand does the same
// (so a nonce with extra bytes in front, which old librdkafka sent, is
// Kafka's to accept and Strand's too — not a case here).
func TestCVE_2024_56128_ScramNonceMismatch(t *testing.T) {
	t.Parallel()
	ts := secureServer(t, broker.Config{}, nil)
	run := func(name string, nonce func(s *scramRaw) string) (*kmsg.SASLAuthenticateResponse, *rawClient) {
		t.Helper()
		c := dial(t, ts.addr)
		saslStart(t, c, sasl.ScramSHA256)
		s := &scramRaw{user: "alice", pass: "alicepw"}
		r := saslStep(c, s.first())
		wantCode(t, name+": client-first", r.ErrorCode, nil)
		s.readServerFirst(t, r.SASLAuthBytes)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = s.final(t, nonce(s))
		corr := c.send(auth, 2)
		return c.recv(auth, corr).(*kmsg.SASLAuthenticateResponse), c
	}
	// The control: the right nonce and the same proof computation log in.
	r, c := run("control", func(s *scramRaw) string { return s.snonce })
	wantCode(t, "SCRAM with the right nonce", r.ErrorCode, nil)
	md := kmsg.NewPtrMetadataRequest()
	c.do(md, 9)

	other := func(s *scramRaw) string { // another session's nonce (a replay)
		o := &scramRaw{user: "alice", pass: "alicepw"}
		c := dial(t, ts.addr)
		saslStart(t, c, sasl.ScramSHA256)
		o.readServerFirst(t, saslStep(c, o.first()).SASLAuthBytes)
		return o.snonce
	}
	for _, tc := range []struct {
		name  string
		nonce func(s *scramRaw) string
	}{
		{"client nonce only", func(s *scramRaw) string { return s.cnonce }},
		{"server part changed", func(s *scramRaw) string {
			b := []byte(s.snonce)
			b[len(b)-1] ^= 1
			return string(b)
		}},
		{"server part truncated", func(s *scramRaw) string { return s.snonce[:len(s.snonce)-1] }},
		{"extra bytes after", func(s *scramRaw) string { return s.snonce + "x" }},
		{"another session's nonce", other},
		{"empty", func(*scramRaw) string { return "" }},
	} {
		r, c := run(tc.name, tc.nonce)
		wantCode(t, tc.name, r.ErrorCode, kerr.SaslAuthenticationFailed)
		c.send(kmsg.NewPtrMetadataRequest(), 9)
		expectClosedSilently(t, c, tc.name)
	}
}

// TestCVE_2018_1288_ReplicaIDFromClient: an authenticated client (not a
// broker) that sends Fetch, ListOffsets and OffsetForLeaderEpoch with a
// replica id ≥ 0 is not a follower. With an authorizer a follower Fetch
// needs Cluster:ClusterAction (every partition TOPIC_AUTHORIZATION_FAILED
// without it, as Kafka); without one, and for ListOffsets and
// OffsetForLeaderEpoch, it is answered as a consumer's. A follower fetch
// is replication only on a cluster node's internal listener: the control
// sends the same Fetch to an internal listener of this single node, where
// it takes the follower path (ReadForFollower, which answers
// NOT_LEADER_OR_FOLLOWER: the node has no followers), so a client
// listener that took that path would show. The high watermark, log end
// and ISR are unchanged afterwards. (A replicated partition whose high
// watermark a fake follower could move needs a cluster; the single-node
// broker keeps no follower state to move.)
func TestCVE_2018_1288_ReplicaIDFromClient(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	users, err := sasl.New(map[string]string{"admin": "adminpw", "alice": "alicepw"})
	if err != nil {
		t.Fatal(err)
	}
	followerFetch := func(tp *broker.Topic, v int16) *kmsg.FetchRequest {
		req := fetchReq("t", tp.ID, map[int32]int64{0: 0})
		if v >= 15 {
			req.ReplicaState.ID, req.ReplicaState.Epoch = 7, 1
		} else {
			req.ReplicaID = 7
		}
		return req
	}
	for _, mode := range []string{"authorizer", "no authorizer", "internal listener (control)"} {
		cfg := Config{SASL: users}
		switch mode {
		case "authorizer":
			cfg.Authorizer = acl.New(acl.Config{SuperUsers: []acl.Principal{"User:admin"}})
		case "internal listener (control)":
			cfg = Config{Internal: true}
		}
		ts := startServer(t, broker.Config{}, cfg)
		tp := createTopic(t, ts.b, "t", 1, nil)
		p, _ := tp.Partition(0)
		if _, err := p.Append(ctx, batch(t, 3, -1, -1, -1), broker.AcksAll); err != nil {
			t.Fatal(err)
		}
		hw, leo, isr := p.HighWatermark(), p.LogEndOffset(), p.ISR()
		c := dial(t, ts.addr)
		if mode == "internal listener (control)" {
			for _, v := range []int16{12, 15} {
				fp := fetchPartition(t, c.do(followerFetch(tp, v), v))
				if fp.ErrorCode != kerr.NotLeaderForPartition.Code {
					t.Fatalf("control: Fetch v%d as replica 7 on the internal listener: %v, want the follower path's NOT_LEADER_OR_FOLLOWER",
						v, kerr.ErrorForCode(fp.ErrorCode))
				}
			}
			continue
		}
		if mode == "authorizer" {
			adm := dial(t, ts.addr)
			plainLogin(t, adm, "admin", "adminpw")
			req := kmsg.NewPtrCreateACLsRequest()
			for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe} {
				cr := kmsg.NewCreateACLsRequestCreation()
				cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
				cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", op, kmsg.ACLPermissionTypeAllow
				req.Creations = append(req.Creations, cr)
			}
			for _, r := range adm.do(req, 2).(*kmsg.CreateACLsResponse).Results {
				wantCode(t, "grant alice Read+Describe on t", r.ErrorCode, nil)
			}
		}
		plainLogin(t, c, "alice", "alicepw")

		// Fetch v12 (ReplicaID) and v15 (ReplicaState) as node 7.
		for _, v := range []int16{12, 15} {
			fp := fetchPartition(t, c.do(followerFetch(tp, v), v))
			n := countRecords(t, fp.RecordBatches, 0)
			switch {
			case mode == "authorizer" && (fp.ErrorCode == kerr.TopicAuthorizationFailed.Code || fp.ErrorCode == kerr.ClusterAuthorizationFailed.Code):
			case mode == "authorizer":
				t.Errorf("%s: Fetch v%d as replica 7: %v (%d records), want TOPIC_AUTHORIZATION_FAILED (no ClusterAction)", mode, v, kerr.ErrorForCode(fp.ErrorCode), n)
			case fp.ErrorCode != 0 || fp.HighWatermark != int64(hw) || n != int(hw):
				t.Errorf("%s: Fetch v%d as replica 7: %v, high watermark %d, %d records; want a consumer's answer (no error, %d, %d)",
					mode, v, kerr.ErrorForCode(fp.ErrorCode), fp.HighWatermark, n, hw, hw)
			}
		}
		// The same fetch as a consumer is allowed: alice may read t.
		if fp := fetchPartition(t, c.do(fetchReq("t", tp.ID, map[int32]int64{0: 0}), 12)); fp.ErrorCode != 0 || fp.HighWatermark != int64(hw) {
			t.Errorf("%s: consumer Fetch: %v, high watermark %d", mode, kerr.ErrorForCode(fp.ErrorCode), fp.HighWatermark)
		}

		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = 7
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "t"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		lr := c.do(lo, 7).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		switch {
		case lr.ErrorCode == kerr.ClusterAuthorizationFailed.Code || lr.ErrorCode == kerr.TopicAuthorizationFailed.Code:
		case lr.ErrorCode != 0 || lr.Offset != int64(hw):
			t.Errorf("%s: ListOffsets latest as replica 7: %v, offset %d; want the high watermark %d, a consumer's",
				mode, kerr.ErrorForCode(lr.ErrorCode), lr.Offset, hw)
		}

		oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
		oe.ReplicaID = 7
		ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
		ot.Topic = "t"
		op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		op.Partition, op.CurrentLeaderEpoch, op.LeaderEpoch = 0, -1, 0
		ot.Partitions = append(ot.Partitions, op)
		oe.Topics = append(oe.Topics, ot)
		or := c.do(oe, 3).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		switch {
		case or.ErrorCode == kerr.ClusterAuthorizationFailed.Code || or.ErrorCode == kerr.TopicAuthorizationFailed.Code:
		case or.ErrorCode != 0 || or.EndOffset != int64(leo):
			t.Errorf("%s: OffsetForLeaderEpoch as replica 7: %v, end offset %d; want a consumer's answer (%d)",
				mode, kerr.ErrorForCode(or.ErrorCode), or.EndOffset, leo)
		}

		if p.HighWatermark() != hw || p.LogEndOffset() != leo || !slices.Equal(p.ISR(), isr) {
			t.Errorf("%s: after the replica-id requests high watermark %d, log end %d, ISR %v; before %d, %d, %v",
				mode, p.HighWatermark(), p.LogEndOffset(), p.ISR(), hw, leo, isr)
		}
		t.Logf("%s: Fetch/ListOffsets/OffsetForLeaderEpoch as replica 7 done; high watermark %d, log end %d, ISR %v unchanged", mode, hw, leo, isr)
	}
}

// memProbe samples the process's memory: the broker runs in the test.
type memProbe struct {
	heapInuse, stackInuse, totalAlloc, rss uint64
}

func probeMem() memProbe {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memProbe{heapInuse: ms.HeapInuse, stackInuse: ms.StackInuse, totalAlloc: ms.TotalAlloc, rss: rssBytes()}
}

// rssBytes is the resident set size from /proc/self/statm (0 elsewhere).
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

func growth(after, before uint64) uint64 {
	if after < before {
		return 0
	}
	return after - before
}

// memLimit is the row's bound on the process's memory growth.
const memLimit = 64 << 20

// hostileClosed writes b on a new connection (then half-closes if asked)
// and asserts the server closes it with no answer within a bound.
func hostileClosed(t *testing.T, addr, name string, b []byte, halfClose bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server may close on the size prefix while the rest is still
	// being written: a reset or broken pipe then is the close.
	if _, err := c.Write(b); err != nil && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("%s: %v", name, err)
	}
	if halfClose {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	switch n, open := firstBytes(c, 10*time.Second); {
	case n != 0:
		t.Fatalf("%s: the server answered (%d bytes)", name, n)
	case open:
		t.Fatalf("%s: the server did not close the connection within 10s", name)
	}
}

// TestCVE_2022_34917_HugePreAuthFrames: before authentication a SASL
// listener reads frames of at most sasl.server.max.receive.size (512 KiB,
// Kafka's fix of the CVE): a size prefix of 0x7fffffff, and a
// SaslAuthenticate claiming 100 MB (before and after the handshake), are
// closed on reading the prefix — no allocation, no share of the request
// budget held while the claimed bytes never come — and 2,000 idle
// unauthenticated connections grow the process's RSS by less than 64 MiB
// (and its heap and stacks by less than 64 KiB a connection). An
// authenticated client is served throughout. Not parallel: the memory
// figures are the process's.
func TestCVE_2022_34917_HugePreAuthFrames(t *testing.T) {
	const idle = 2000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < 3*idle {
		want := lim
		want.Cur = min(lim.Max, 3*idle)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil || want.Cur < 2*idle+200 {
			t.Skipf("need %d file descriptors, have %d (max %d): %v", 2*idle+200, lim.Cur, lim.Max, err)
		}
		t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
	}
	users, err := sasl.New(map[string]string{"app": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, broker.Config{}, Config{SASL: users})
	good := dial(t, ts.addr)
	plainLogin(t, good, "app", "s3cret")
	served := func(when string) {
		t.Helper()
		if r := good.do(kmsg.NewPtrMetadataRequest(), 9).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
			t.Fatalf("%s: authenticated client's Metadata: %d brokers", when, len(r.Brokers))
		}
	}

	before := probeMem()
	hostileClosed(t, ts.addr, "size 0x7fffffff", binary.BigEndian.AppendUint32(nil, 0x7fffffff), false)
	huge := append(binary.BigEndian.AppendUint32(nil, 100<<20), header(nil, apiKeySaslAuthenticate, 2, 1)...)
	huge = append(huge, make([]byte, 64)...)
	hostileClosed(t, ts.addr, "SaslAuthenticate claiming 100 MB", huge, false)
	hostileClosed(t, ts.addr, "a 600 KiB pre-auth frame", sized(append(header(nil, apiKeyApiVersions, 0, 1), make([]byte, 600<<10)...)), false)
	for i := range 20 { // after a handshake, as a real exchange would
		c := dial(t, ts.addr)
		saslStart(t, c, sasl.Plain)
		if _, err := c.conn.Write(huge); err != nil {
			t.Fatal(err)
		}
		expectClosedSilently(t, c, fmt.Sprintf("SaslAuthenticate claiming 100 MB after the handshake (%d)", i))
		c.conn.Close()
	}
	frames := probeMem()
	t.Logf("huge pre-auth frames: allocated %.1f MiB in all, heap in use %+.1f MiB, RSS %+.1f MiB",
		mib(frames.totalAlloc-before.totalAlloc), float64(int64(frames.heapInuse)-int64(before.heapInuse))/(1<<20),
		float64(int64(frames.rss)-int64(before.rss))/(1<<20))
	if a := frames.totalAlloc - before.totalAlloc; a >= memLimit {
		t.Errorf("the huge pre-auth frames made the process allocate %.1f MiB; want < %d MiB", mib(a), memLimit>>20)
	}
	served("after the huge frames")
	// The cap lifts once authenticated: a 700 KiB produce is served.
	createTopic(t, ts.b, "big", 1, nil)
	big, err := record.Encode(0, []record.Record{{Value: make([]byte, 700<<10)}}, record.DefaultBatchOptions())
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "700 KiB produce after authentication", producePartition(t, good.do(produceReq("big", 0, big), 9)).ErrorCode, nil)

	// 2,000 idle unauthenticated connections, each having had its
	// ApiVersions answered (so the server has surely set it up).
	conns := make([]*rawClient, 0, idle)
	defer func() {
		for _, c := range conns {
			c.conn.Close()
		}
	}()
	before = probeMem()
	deadline := time.Now().Add(2 * time.Minute)
	for range idle {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, &rawClient{t: t, conn: nc})
		if time.Now().After(deadline) {
			t.Fatalf("opening %d connections took over 2 minutes", len(conns))
		}
	}
	av := kmsg.NewPtrApiVersionsRequest()
	for _, c := range conns {
		c.send(av, 0)
	}
	for _, c := range conns {
		c.recv(av, 1)
	}
	after := probeMem()
	heap := growth(after.heapInuse+after.stackInuse, before.heapInuse+before.stackInuse)
	rss := growth(after.rss, before.rss)
	t.Logf("%d idle pre-auth connections: heap+stacks %+.1f MiB (%.1f KiB each), RSS %+.1f MiB (both ends are this process)",
		idle, mib(heap), float64(heap)/idle/1024, mib(rss))
	// The row's bound is on RSS (what the kernel holds for the process).
	// Heap and stacks also count what is reserved but never touched — each
	// connection's 32 KiB read buffer is most of it — so they get a looser
	// per-connection bound, which still catches a frame-sized (256 KiB and
	// up) buffer set aside per unauthenticated connection.
	perLimit := uint64(64 << 10)
	if raceDetector {
		perLimit *= 2 // the detector's own state per goroutine and allocation
		t.Logf("race detector on: RSS not bounded (its shadow memory dominates)")
	} else if after.rss != 0 && rss >= memLimit {
		t.Errorf("%d idle pre-auth connections grew RSS by %.1f MiB; want < %d MiB", idle, mib(rss), memLimit>>20)
	}
	if per := heap / idle; per >= perLimit {
		t.Errorf("%d idle pre-auth connections grew heap+stacks by %.1f MiB, %.1f KiB each; want < %d KiB each", idle, mib(heap), float64(per)/1024, perLimit>>10)
	}
	served("beside the idle connections")
}

// TestKAFKA_4090_TLSPlaintextConfusion: a TLS ClientHello sent to a
// plaintext listener reads as a size prefix of about 352 MB
// (0x16030100…): the connection is closed on the prefix with nothing
// allocated for it; plaintext Kafka frames sent to a TLS listener fail the
// TLS handshake and are closed with at most a TLS alert, never a Kafka
// answer. The process lives on and good clients of both listeners are
// served after. Not parallel: the memory figure is the process's.
func TestKAFKA_4090_TLSPlaintextConfusion(t *testing.T) {
	certs := testcert.MustSet(t, "client")
	plain := startServer(t, broker.Config{}, Config{})
	tlsAddr := startServerTLS(t, broker.Config{}, Config{},
		&tls.Config{Certificates: []tls.Certificate{certs.Server.TLS}, MinVersion: tls.VersionTLS12}).addr
	clientTLS := &tls.Config{RootCAs: certs.CA.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if h, _, err := net.SplitHostPort(tlsAddr); err == nil {
		clientTLS.ServerName = h
	}

	before := probeMem()
	// A real ClientHello to the plaintext port.
	var hello []byte
	for range 10 {
		nc, err := net.Dial("tcp", plain.addr)
		if err != nil {
			t.Fatal(err)
		}
		rec := &recordingConn{Conn: nc}
		tc := tls.Client(rec, clientTLS)
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		err = tc.Handshake()
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("TLS handshake with the plaintext listener: %v; want the connection closed", err)
		}
		hello = rec.written()
		nc.Close()
	}
	if len(hello) < 4 || hello[0] != 0x16 {
		t.Fatalf("no ClientHello recorded: % x", hello[:min(len(hello), 8)])
	}
	claimed := binary.BigEndian.Uint32(hello)
	hostileClosed(t, plain.addr, "ClientHello bytes", hello, false)

	// Plaintext Kafka frames to the TLS port.
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"ApiVersions", sized(header(nil, apiKeyApiVersions, 0, 1))},
		{"Metadata", kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 1)},
		{"size 0x7fffffff", append(binary.BigEndian.AppendUint32(nil, 0x7fffffff), header(nil, 0, 9, 1)...)},
		{"claims 100 MB", append(binary.BigEndian.AppendUint32(nil, 100<<20), header(nil, 0, 9, 1)...)},
	} {
		c, err := net.Dial("tcp", tlsAddr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(tc.b); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		got, err := io.ReadAll(c)
		c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("plaintext %s to the TLS listener: not closed within 15s", tc.name)
		}
		if len(got) > 0 && got[0] != 0x15 { // a TLS alert record is all it may say
			t.Fatalf("plaintext %s to the TLS listener: answered % x…", tc.name, got[:min(len(got), 16)])
		}
	}
	after := probeMem()
	alloc := after.totalAlloc - before.totalAlloc
	t.Logf("ClientHello read as a size prefix: %d bytes (%.0f MB); the confused connections allocated %.1f MiB in all, RSS %+.1f MiB",
		claimed, float64(claimed)/1e6, mib(alloc), float64(int64(after.rss)-int64(before.rss))/(1<<20))
	if alloc >= memLimit {
		t.Errorf("the confused connections made the process allocate %.1f MiB; want < %d MiB", mib(alloc), memLimit>>20)
	}

	// Good clients of both listeners are served.
	for _, l := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"plaintext", []kgo.Opt{kgo.SeedBrokers(plain.addr)}},
		{"TLS", []kgo.Opt{kgo.SeedBrokers(tlsAddr), kgo.DialTLSConfig(clientTLS)}},
	} {
		cl, err := kgo.NewClient(append(l.opts, kgo.DefaultProduceTopic("after"), kgo.AllowAutoTopicCreation())...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("still served")}).FirstErr()
		cancel()
		cl.Close()
		if err != nil {
			t.Errorf("a good %s client after the confusion: %v", l.name, err)
		}
	}
}

// recordingConn keeps what a TLS client writes (its ClientHello).
type recordingConn struct {
	net.Conn
	mu  sync.Mutex
	buf []byte
}

func (r *recordingConn) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.buf = append(r.buf, b...)
	r.mu.Unlock()
	return r.Conn.Write(b)
}

func (r *recordingConn) written() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.buf)
}

// TestSASLUserEnumeration: a failed login of an unknown user and a wrong
// password for a real one are indistinguishable to the client: the same
// error code and message, each held for at least
// connection.failed.authentication.delay.ms, for PLAIN and SCRAM (whose
// server-first for an unknown user is made up like a real one's). The
// medians of both are printed; with a shared machine no tighter timing
// assertion is made. D-T6: none of the wrong-password logins succeeds.
func TestSASLUserEnumeration(t *testing.T) {
	t.Parallel()
	users, err := sasl.New(map[string]string{"alice": "alicepw"})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, broker.Config{}, Config{SASL: users})
	delay := ts.s.cfg.FailedAuthDelay
	if delay <= 0 {
		t.Fatalf("failed-authentication delay %v", delay)
	}
	const workers = 25
	type outcome struct {
		code  int16
		msg   string
		took  time.Duration // SaslAuthenticate sent to its answer
		first time.Duration // SCRAM: the client-first's round trip
		err   error
	}
	// try runs one failing login on a new connection.
	try := func(mech, user string) outcome {
		nc, err := net.DialTimeout("tcp", ts.addr, 10*time.Second)
		if err != nil {
			return outcome{err: err}
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
		do := func(req kmsg.Request, v int16, corr int32) (kmsg.Response, error) {
			req.SetVersion(v)
			if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, corr)); err != nil {
				return nil, err
			}
			var size [4]byte
			if _, err := io.ReadFull(nc, size[:]); err != nil {
				return nil, err
			}
			frame := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(nc, frame); err != nil {
				return nil, err
			}
			resp := req.ResponseKind()
			body := frame[4:]
			if resp.IsFlexible() {
				body = body[1:] // empty header tags
			}
			return resp, resp.ReadFrom(body)
		}
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = mech
		if _, err := do(hs, 1, 1); err != nil {
			return outcome{err: err}
		}
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		var first time.Duration
		if mech == sasl.Plain {
			auth.SASLAuthBytes = []byte("\x00" + user + "\x00wrongpw")
		} else {
			s := &scramRaw{user: user, pass: "wrongpw"}
			start := time.Now()
			r, err := do(func() kmsg.Request { a := kmsg.NewPtrSASLAuthenticateRequest(); a.SASLAuthBytes = s.first(); return a }(), 2, 2)
			first = time.Since(start)
			if err != nil {
				return outcome{err: err}
			}
			ar := r.(*kmsg.SASLAuthenticateResponse)
			if ar.ErrorCode != 0 {
				return outcome{code: ar.ErrorCode, err: fmt.Errorf("client-first refused: %v", kerr.ErrorForCode(ar.ErrorCode))}
			}
			s.serverFirst = string(ar.SASLAuthBytes)
			for _, kv := range strings.Split(s.serverFirst, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "r":
					s.snonce = v
				case "s":
					s.salt, _ = base64.StdEncoding.DecodeString(v)
				case "i":
					s.iterations, _ = strconv.Atoi(v)
				}
			}
			if s.iterations != 4096 || len(s.salt) != 16 {
				return outcome{err: fmt.Errorf("server-first %q does not look like a real user's", s.serverFirst)}
			}
			auth.SASLAuthBytes = s.final(t, s.snonce)
		}
		start := time.Now()
		r, err := do(auth, 2, 3)
		took := time.Since(start)
		if err != nil {
			return outcome{err: err}
		}
		ar := r.(*kmsg.SASLAuthenticateResponse)
		o := outcome{code: ar.ErrorCode, took: took, first: first}
		if ar.ErrorMessage != nil {
			o.msg = *ar.ErrorMessage
		}
		return o
	}
	for _, tc := range []struct {
		mech  string
		tries int
	}{{sasl.Plain, 1000}, {sasl.ScramSHA256, 200}} {
		results := map[string][]outcome{}
		for _, user := range []string{"alice", "nobody"} {
			out := make([]outcome, tc.tries)
			var wg sync.WaitGroup
			next := make(chan int)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						out[i] = try(tc.mech, user)
					}
				}()
			}
			for i := range out {
				next <- i
			}
			close(next)
			wg.Wait()
			results[user] = out
		}
		ref := results["alice"][0]
		medians, firsts := map[string]time.Duration{}, map[string]time.Duration{}
		for user, out := range results {
			took, first := make([]time.Duration, 0, len(out)), make([]time.Duration, 0, len(out))
			for i, o := range out {
				switch {
				case o.err != nil:
					t.Fatalf("%s %s try %d: %v", tc.mech, user, i, o.err)
				case o.code == 0:
					t.Fatalf("%s %s try %d: a wrong password logged in", tc.mech, user, i)
				case o.code != ref.code || o.msg != ref.msg:
					t.Fatalf("%s %s try %d: %v %q; the wrong password for alice gets %v %q", tc.mech, user, i,
						kerr.ErrorForCode(o.code), o.msg, kerr.ErrorForCode(ref.code), ref.msg)
				case o.took < delay:
					t.Errorf("%s %s try %d: answered after %v, before the failure delay %v", tc.mech, user, i, o.took, delay)
				}
				took, first = append(took, o.took), append(first, o.first)
			}
			slices.Sort(took)
			slices.Sort(first)
			medians[user], firsts[user] = took[len(took)/2], first[len(first)/2]
		}
		wantCode(t, tc.mech+" failure", ref.code, kerr.SaslAuthenticationFailed)
		t.Logf("%s, %d tries each (%d at a time): error %v %q for both; median delay wrong password %v, unknown user %v (failure delay %v)",
			tc.mech, tc.tries, workers, kerr.ErrorForCode(ref.code), ref.msg, medians["alice"].Round(100*time.Microsecond),
			medians["nobody"].Round(100*time.Microsecond), delay)
		if tc.mech != sasl.Plain {
			// Printed, not asserted (a shared machine): an unknown user's
			// decoy credential costs no PBKDF2, so the two should match.
			t.Logf("%s client-first round trip, median: known user %v, unknown user %v", tc.mech,
				firsts["alice"].Round(10*time.Microsecond), firsts["nobody"].Round(10*time.Microsecond))
		}
	}
}

// TestPreAuthSurface: on a SASL listener every API key the broker
// advertises but SaslHandshake (17), ApiVersions (18) and SaslAuthenticate
// (36), sent before authentication, gets no answer: the connection is
// closed, as Kafka's SaslServerAuthenticator does (an unexpected request
// during the handshake is an IllegalSaslStateException that closes it).
// 0 of them are served. The control: after authenticating, the same
// connection setup gets answers (Metadata).
func TestPreAuthSurface(t *testing.T) {
	t.Parallel()
	users, err := sasl.New(map[string]string{"app": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, broker.Config{}, Config{SASL: users})
	c := dial(t, ts.addr)
	avReq := kmsg.NewPtrApiVersionsRequest()
	avReq.ClientSoftwareName, avReq.ClientSoftwareVersion = "strand-test", "1"
	av := c.do(avReq, 3).(*kmsg.ApiVersionsResponse)
	wantCode(t, "ApiVersions before authentication", av.ErrorCode, nil)
	checked, served := 0, 0
	for _, k := range av.ApiKeys {
		switch k.ApiKey {
		case apiKeySaslHandshake, apiKeyApiVersions, apiKeySaslAuthenticate:
			continue
		}
		req := kmsg.RequestForKey(k.ApiKey)
		if req == nil {
			t.Errorf("advertised key %d unknown to kmsg", k.ApiKey)
			continue
		}
		for _, v := range []int16{k.MinVersion, k.MaxVersion} {
			checked++
			c := dial(t, ts.addr)
			req.SetVersion(v)
			if pr, ok := req.(*kmsg.ProduceRequest); ok {
				pr.Acks = -1 // acks=0 would be served silently
			}
			b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("probe")).AppendRequest(nil, req, 1)
			if _, err := c.conn.Write(b); err != nil {
				t.Fatal(err)
			}
			switch n, open := firstBytes(c.conn, 30*time.Second); {
			case n != 0:
				served++
				t.Errorf("%s v%d before authentication: answered (%d bytes)", kmsg.NameForKey(k.ApiKey), v, n)
			case open:
				t.Errorf("%s v%d before authentication: connection left open", kmsg.NameForKey(k.ApiKey), v)
			}
			c.conn.Close()
		}
	}
	t.Logf("%d advertised API keys (min and max versions: %d requests) sent before authentication: %d served", len(av.ApiKeys)-3, checked, served)
	if checked < 40 {
		t.Errorf("only %d requests checked; the listener advertises %d keys", checked, len(av.ApiKeys))
	}
	c = dial(t, ts.addr)
	plainLogin(t, c, "app", "s3cret")
	if r := c.do(kmsg.NewPtrMetadataRequest(), 9).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
		t.Fatalf("Metadata after authentication: %d brokers", len(r.Brokers))
	}
}
