package console

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/partitioner"
	"github.com/strandmq/strand/internal/record"
)

// This file is the topic actions: create, delete (typed confirmation),
// edit a config, produce a test record. Each is a POST form, guarded by
// checkAction (guard.go), answered with a redirect (303) to the page that
// shows the result, or an error page.

func (c *Console) topicActions() {
	c.action("/actions/topics", c.createTopic)
	c.action("/actions/topics/{topic}/delete", c.deleteTopic)
	c.action("/actions/topics/{topic}/config", c.alterConfig)
	c.action("/actions/topics/{topic}/produce", c.produceTest)
}

// brokerError gives a broker error its HTTP meaning.
func brokerError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, broker.ErrUnknownTopicOrPartition):
		return fmt.Errorf("%w: %w", errNotFound, err)
	case errors.Is(err, broker.ErrTopicExists), errors.Is(err, broker.ErrGroupNotEmpty):
		return fmt.Errorf("%w: %w", errConflict, err)
	case errors.Is(err, broker.ErrInvalidConfig), errors.Is(err, broker.ErrInvalidTopic),
		errors.Is(err, broker.ErrInvalidPartitions), errors.Is(err, broker.ErrOffsetOutOfRange):
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	return err
}

// pairs reads "name=value" lines (blank lines skipped).
func pairs(field, s string) ([][2]string, error) {
	var out [][2]string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%w: %s: %q is not name=value", errBadRequest, field, line)
		}
		out = append(out, [2]string{strings.TrimSpace(k), v})
	}
	return out, nil
}

func (c *Console) createTopic(w http.ResponseWriter, r *http.Request) error {
	name := strings.TrimSpace(r.PostForm.Get("name"))
	if name == "" {
		return fmt.Errorf("%w: a topic needs a name", errBadRequest)
	}
	spec := broker.TopicSpec{Name: name, Partitions: -1, ReplicationFactor: -1, Configs: map[string]string{}}
	if s := strings.TrimSpace(r.PostForm.Get("partitions")); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: partitions %q: want a count of 1 or more", errBadRequest, s)
		}
		spec.Partitions = int32(n)
	}
	cfgs, err := pairs("configs", r.PostForm.Get("configs"))
	if err != nil {
		return err
	}
	for _, kv := range cfgs {
		spec.Configs[kv[0]] = strings.TrimSpace(kv[1])
	}
	if _, err := c.b.CreateTopic(spec); err != nil {
		return brokerError(err)
	}
	c.logger.Info("console: topic created", "topic", name, "client", r.RemoteAddr)
	http.Redirect(w, r, "/topics/"+url.PathEscape(name), http.StatusSeeOther)
	return nil
}

func (c *Console) deleteTopic(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("topic")
	if got := r.PostForm.Get("confirm"); got != name {
		return fmt.Errorf("%w: to delete topic %q, type its name exactly (got %q)", errBadRequest, name, got)
	}
	if err := c.b.DeleteTopic(name); err != nil {
		return brokerError(err)
	}
	c.logger.Info("console: topic deleted", "topic", name, "client", r.RemoteAddr)
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

// alterConfig sets a config (op=set) or removes its override (op=delete),
// as IncrementalAlterConfigs does.
func (c *Console) alterConfig(w http.ResponseWriter, r *http.Request) error {
	topic := r.PathValue("topic")
	ch := broker.ConfigChange{Name: strings.TrimSpace(r.PostForm.Get("name")), Value: strings.TrimSpace(r.PostForm.Get("value"))}
	switch op := r.PostForm.Get("op"); op {
	case "set", "":
		ch.Op = broker.OpSet
	case "delete":
		ch.Op = broker.OpDelete
	default:
		return fmt.Errorf("%w: op %q: want set or delete", errBadRequest, op)
	}
	if ch.Name == "" {
		return fmt.Errorf("%w: which config? (name is empty)", errBadRequest)
	}
	if err := c.b.IncrementalAlterConfigs(topic, []broker.ConfigChange{ch}, false); err != nil {
		return brokerError(err)
	}
	c.logger.Info("console: topic config changed", "topic", topic, "config", ch.Name, "client", r.RemoteAddr)
	http.Redirect(w, r, "/topics/"+url.PathEscape(topic)+"#configs", http.StatusSeeOther)
	return nil
}

// produceTest produces one record: to the partition given, else by its
// key as Kafka's default partitioner would (murmur2), else to partition 0.
// An empty key is no key. Headers are name=value lines.
func (c *Console) produceTest(w http.ResponseWriter, r *http.Request) error {
	topic := r.PathValue("topic")
	t, err := c.b.Topic(topic)
	if err != nil {
		return brokerError(err)
	}
	rec := record.Record{Value: []byte(r.PostForm.Get("value"))}
	if k := r.PostForm.Get("key"); k != "" {
		rec.Key = []byte(k)
	}
	hs, err := pairs("headers", r.PostForm.Get("headers"))
	if err != nil {
		return err
	}
	for _, kv := range hs {
		rec.Headers = append(rec.Headers, record.RecordHeader{Key: kv[0], Value: []byte(kv[1])})
	}
	p := int32(0)
	if rec.Key != nil {
		p = int32(partitioner.ForKey(rec.Key, int(t.Partitions())))
	}
	if s := strings.TrimSpace(r.PostForm.Get("partition")); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 || int32(n) >= t.Partitions() {
			return fmt.Errorf("%w: partition %q: %s has partitions 0 to %d", errBadRequest, s, topic, t.Partitions()-1)
		}
		p = int32(n)
	}
	off, err := c.b.ProduceRecords(r.Context(), topic, broker.PartitionID(p), []record.Record{rec})
	if err != nil {
		return brokerError(err)
	}
	http.Redirect(w, r, fmt.Sprintf("/topics/%s/partitions/%d?offset=%d", url.PathEscape(topic), p, off), http.StatusSeeOther)
	return nil
}
