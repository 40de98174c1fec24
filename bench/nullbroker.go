package bench

// The null broker: the ceiling a Kafka client can reach on this machine. It
// speaks just enough of the protocol for a franz-go producer (ApiVersions,
// Metadata, InitProducerID, CreateTopics, Produce) and acknowledges every
// produce at once without storing, checking or decoding a record: it only
// counts each batch's records to hand out offsets. Produce workloads only;
// it has nothing to consume.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errUnsupported marks a workload a peer cannot run (the null broker's
// consume); the metric is left out, not failed.
var errUnsupported = errors.New("not supported by this peer")

type nullBroker struct {
	ln   net.Listener
	host string
	port int32

	mu       sync.Mutex
	topics   map[string]*nullTopic
	producer int64
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
}

type nullTopic struct {
	id   [16]byte
	next []int64 // next offset per partition
}

func startNullBroker() (*nullBroker, error) { return startNullBrokerOn("127.0.0.1:0") }

// startNullBrokerOn starts a null broker listening on addr.
func startNullBrokerOn(addr string) (*nullBroker, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	b := &nullBroker{ln: ln, host: host, port: int32(p), topics: make(map[string]*nullTopic), conns: make(map[net.Conn]struct{})}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

func (b *nullBroker) addr() string { return b.ln.Addr().String() }

func (b *nullBroker) close() error {
	err := b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
	return err
}

func (b *nullBroker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns[c] = struct{}{}
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.serve(c)
			b.mu.Lock()
			delete(b.conns, c)
			b.mu.Unlock()
			c.Close()
		}()
	}
}

// serve reads requests and answers each in order. Responses are buffered
// and flushed once no further request is already waiting, so a client that
// pipelines requests gets their responses in few writes. The request buffer
// is reused: nothing in a response refers to it.
func (b *nullBroker) serve(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	var (
		size [4]byte
		body []byte
		out  []byte
	)
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if n < 8 || n > 200<<20 {
			return
		}
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		var err error
		if out, err = b.handle(body, out[:0]); err != nil {
			return
		}
		if len(out) > 0 { // acks=0 has no response
			if _, err := w.Write(out); err != nil {
				return
			}
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}

// handle decodes one request and appends the framed response to buf.
func (b *nullBroker) handle(body, buf []byte) ([]byte, error) {
	key := int16(binary.BigEndian.Uint16(body))
	version := int16(binary.BigEndian.Uint16(body[2:]))
	corr := binary.BigEndian.Uint32(body[4:])
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("null broker: unknown key %d", key)
	}
	req.SetVersion(version)
	rest := body[8:]
	// Client id: a nullable int16-length string.
	if len(rest) < 2 {
		return nil, io.ErrUnexpectedEOF
	}
	if l := int16(binary.BigEndian.Uint16(rest)); l > 0 {
		rest = rest[2+int(l):]
	} else {
		rest = rest[2:]
	}
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, err
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return nil, err
	}
	resp := b.respond(req)
	if resp == nil {
		return buf, nil
	}
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(buf[4:], corr)
	if req.IsFlexible() && key != int16(kmsg.ApiVersions) {
		buf = append(buf, 0) // no tagged fields in the response header
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf, nil
}

func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, io.ErrUnexpectedEOF
	}
	b = b[k:]
	for range n {
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// nullMaxVersions caps what the null broker advertises (Produce v13 would
// address topics by id).
var nullMaxVersions = map[kmsg.Key]int16{
	kmsg.Produce: 12, kmsg.Metadata: 12, kmsg.ApiVersions: 3, kmsg.InitProducerID: 5, kmsg.CreateTopics: 7,
}

func (b *nullBroker) respond(req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for k, v := range nullMaxVersions {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: 0, MaxVersion: v})
		}
		return resp
	case *kmsg.MetadataRequest:
		return b.metadata(req)
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		b.mu.Lock()
		b.producer++
		resp.ProducerID = b.producer
		b.mu.Unlock()
		return resp
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		b.mu.Lock()
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			if _, ok := b.topics[t.Topic]; ok {
				rt.ErrorCode = kerr.TopicAlreadyExists.Code
			} else if t.NumPartitions <= 0 {
				rt.ErrorCode = kerr.InvalidPartitions.Code
			} else {
				nt := &nullTopic{next: make([]int64, t.NumPartitions)}
				rand.Read(nt.id[:])
				b.topics[t.Topic] = nt
				rt.TopicID, rt.NumPartitions, rt.ReplicationFactor = nt.id, t.NumPartitions, 1
			}
			resp.Topics = append(resp.Topics, rt)
		}
		b.mu.Unlock()
		return resp
	case *kmsg.ProduceRequest:
		return b.produce(req)
	}
	return req.ResponseKind()
}

func (b *nullBroker) metadata(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: b.host, Port: b.port}}
	resp.ControllerID = 0
	b.mu.Lock()
	defer b.mu.Unlock()
	add := func(name string) {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		t, ok := b.topics[name]
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			return
		}
		rt.TopicID = t.id
		for p := range t.next {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition = int32(p)
			rp.Leader, rp.Replicas, rp.ISR = 0, []int32{0}, []int32{0}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Topics == nil {
		for name := range b.topics {
			add(name)
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic != nil {
				add(*t.Topic)
			}
		}
	}
	return resp
}

// produce acknowledges every batch, counting its records (lastOffsetDelta
// + 1, read from the v2 batch header) to assign offsets.
func (b *nullBroker) produce(req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		nt := b.topics[t.Topic]
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LogAppendTime = -1
			if nt == nil || p.Partition < 0 || int(p.Partition) >= len(nt.next) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				rp.BaseOffset = nt.next[p.Partition]
				for recs := p.Records; len(recs) >= 27; {
					l := int(binary.BigEndian.Uint32(recs[8:])) + 12
					nt.next[p.Partition] += int64(binary.BigEndian.Uint32(recs[23:])) + 1
					recs = recs[min(l, len(recs)):]
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		return nil
	}
	return resp
}

// nullPeer drives the null broker with the Kafka peers' client settings.
type nullPeer struct {
	*kafkaPeer
	nb *nullBroker
}

func startNull(ctx context.Context, o Options) (*nullPeer, error) {
	nb, err := startNullBroker()
	if err != nil {
		return nil, err
	}
	kp, err := newKafkaClients(o, nb.addr(), nb.close)
	if err != nil {
		return nil, err
	}
	return &nullPeer{kafkaPeer: kp, nb: nb}, nil
}

func (p *nullPeer) consume(context.Context, string, *payload, int, any) (time.Duration, error) {
	return 0, errUnsupported
}

func (p *nullPeer) endToEnd(context.Context, string, *payload) ([]time.Duration, error) {
	return nil, errUnsupported
}
