package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand"
)

// The replicated peer, "strand-rf3": three Strand nodes in this process,
// every topic with replication factor 3 and min.insync.replicas 2, the
// clients' acks=all waiting for two copies. Its ratios to "strand" (one
// node, one copy) are what replication costs on this machine;
// "strand-rf3-tls" is the same with mutual TLS between the nodes, and its
// ratio to "strand-rf3" is what securing the cluster costs.

const clusterNodes = 3

// startStrandCluster starts three nodes in dir and returns the first
// node's Kafka address and a function that stops them all. With secure,
// the nodes talk mutual TLS ("strand-rf3-tls").
func startStrandCluster(ctx context.Context, dir string, secure bool) (string, func() error, error) {
	return startStrandClusterAt(ctx, dir, secure, "")
}

// startStrandClusterAt is startStrandCluster with the first node's Kafka
// address chosen by the caller (any free one when first is empty).
func startStrandClusterAt(ctx context.Context, dir string, secure bool, first string) (string, func() error, error) {
	var certs []*strand.InterNodeTLS
	if secure {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, err
		}
		var err error
		if certs, err = clusterTLS(dir, clusterNodes); err != nil {
			return "", nil, fmt.Errorf("inter-node certificates: %w", err)
		}
	}
	// Every port at once, none of them first: picked one after another,
	// each closed before the next, the kernel could hand out one port
	// twice (or first's), and a node failed with "address already in use".
	free, err := freeAddrsExcept(2*clusterNodes, first)
	if err != nil {
		return "", nil, err
	}
	var voters []strand.Voter
	var addrs []string
	for id := int32(1); id <= clusterNodes; id++ {
		raft, kafka := free[2*(id-1)], free[2*(id-1)+1]
		if id == 1 && first != "" {
			kafka = first
		}
		voters = append(voters, strand.Voter{ID: id, Addr: raft})
		addrs = append(addrs, kafka)
	}
	type started struct {
		b   *strand.Broker
		err error
	}
	results := make(chan started, clusterNodes)
	for i := range clusterNodes { // together: each waits for a quorum
		go func() {
			// No partition balancer: the three nodes are there from the
			// start, so all it could do is undo the harness's placement —
			// servercost's strand-rf3 puts every leader on node 1, the
			// address its load generator writes to, and 10 s in (the
			// balancer's default interval) the balancer moved half of them,
			// failing every produce run of 10 s or more with
			// NOT_LEADER_FOR_PARTITION.
			cc := &strand.ClusterConfig{Quorum: voters, DefaultReplicationFactor: clusterNodes, PartitionBalancerInterval: -1}
			if certs != nil {
				cc.TLS = certs[i]
			}
			b, err := strand.Start(ctx, strand.Config{
				Dir: filepath.Join(dir, fmt.Sprint("n", i+1)), Addr: addrs[i], NodeID: int32(i + 1),
				Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
				TopicDefaults: map[string]string{"min.insync.replicas": "2"},
				Cluster:       cc,
			})
			results <- started{b, err}
		}()
	}
	var nodes []*strand.Broker
	var errs []error
	for range clusterNodes {
		r := <-results
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		nodes = append(nodes, r.b)
	}
	stop := func() error {
		var errs []error
		for _, b := range nodes {
			errs = append(errs, b.Close())
		}
		return errors.Join(errs...)
	}
	if len(errs) > 0 {
		stop()
		return "", nil, fmt.Errorf("start a %d-node cluster: %w", clusterNodes, errors.Join(errs...))
	}
	if err := waitBrokers(ctx, addrs[0], clusterNodes); err != nil {
		stop()
		return "", nil, err
	}
	return addrs[0], stop, nil
}

// waitBrokers waits until the metadata from seed lists n live brokers:
// until then a topic with n replicas cannot be placed.
func waitBrokers(ctx context.Context, seed string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err == nil && len(md.Brokers) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the %d-node cluster never listed %d live brokers (last error %v): %w", n, n, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freeAddrsExcept returns n distinct loopback addresses with ports free
// now, none equal to except: all listened on together, then closed.
func freeAddrsExcept(n int, except string) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var out []string
	for len(out) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		if a := ln.Addr().String(); a != except {
			out = append(out, a)
		}
	}
	return out, nil
}

// FreeAddr is a loopback address with a port free now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
