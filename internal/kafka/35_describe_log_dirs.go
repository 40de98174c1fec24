package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// DescribeLogDirs: v0-v4.
//
// Behavior:
//   - One log dir: the broker's data directory (absolute path), holding
//     every replica on this node — in a cluster the partitions it leads
//     and those it follows, not the others (ask each broker, as Kafka's
//     tools do); each reported with its size on disk (segments and
//     indexes), OffsetLag 0 and IsFuture false (replicas move between
//     nodes, never between directories of one).
//   - Topics null: every topic, internal ones included, as Kafka reports
//     them; otherwise the named partitions that exist (unknown ones are left
//     out, as Kafka leaves them out).
//   - v4: TotalBytes and UsableBytes of the directory's file system (-1
//     where the platform cannot tell).

func (s *Server) handleDescribeLogDirs(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = s.b.Dir()
	dir.TotalBytes, dir.UsableBytes = diskSpace(dir.Dir)
	add := func(t *broker.Topic, parts []int32) {
		rt := kmsg.NewDescribeLogDirsResponseDirTopic()
		rt.Topic = t.Name
		for _, id := range parts {
			p, err := t.Partition(broker.PartitionID(id))
			if err != nil {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size = id, p.Size()
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, rt)
		}
	}
	if req.Topics == nil {
		for _, t := range s.b.Topics() {
			parts := make([]int32, t.Partitions())
			for i := range parts {
				parts[i] = int32(i)
			}
			add(t, parts)
		}
	} else {
		for _, rt := range req.Topics {
			if t, err := s.b.Topic(rt.Topic); err == nil {
				add(t, rt.Partitions)
			}
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
