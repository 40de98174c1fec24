package partition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/strandmq/strand/internal/vfs"
)

// RemoteDeletesDir, in the data directory, journals the partitions whose
// remote objects are still to be deleted: one file per partition of a
// deleted topic, written (and synced) before the partition's local data
// goes and removed once its objects are gone. A deletion the store
// refused, or one a crash interrupted, is so tried again by the next tier
// pass, also after a restart, and no object outlives its topic for ever
// (issue 36's "no orphan forever"). Node.RemoteDeletes is its path.
const RemoteDeletesDir = "remote-deletes"

// remoteDelete is one journal entry: the partition's tier prefix is
// <topic>-<topic id>/<partition>/ (tiered.Tier.Partition).
type remoteDelete struct {
	Topic     string      `json:"topic"`
	TopicID   string      `json:"topic_id"`
	Partition PartitionID `json:"partition"`
}

// ForgetRemote journals that the remote objects of topic's partition id/p
// are to be deleted. Without a tier it does nothing.
func ForgetRemote(node *Node, topic string, id TopicID, p PartitionID) error {
	if node.Tier == nil || node.RemoteDeletes == "" {
		return nil
	}
	data, err := json.Marshal(remoteDelete{Topic: topic, TopicID: id.String(), Partition: p})
	if err != nil {
		return err
	}
	if err := node.FS.MkdirAll(node.RemoteDeletes, 0o755); err != nil {
		return err
	}
	if err := vfs.WriteFileSync(node.FS, node.RemoteDeletes, journalEntry(node, id, p), data); err != nil {
		return fmt.Errorf("broker: journal the deletion of %s-%d's remote objects: %w", topic, p, err)
	}
	return nil
}

// journalEntry is the path of id/p's entry.
func journalEntry(node *Node, id TopicID, p PartitionID) string {
	return filepath.Join(node.RemoteDeletes, fmt.Sprintf("%s-%d", id.Hex(), p))
}

// DeleteForgotten deletes the remote objects of every journaled partition
// (ForgetRemote) and drops the entries whose objects are all gone. An
// entry whose deletion fails stays for the next call.
func DeleteForgotten(ctx context.Context, node *Node) {
	if node.Tier == nil || node.RemoteDeletes == "" {
		return
	}
	names, err := node.FS.ReadDir(node.RemoteDeletes)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		node.Logger.Warn("broker: read the journal of remote deletions", "dir", node.RemoteDeletes, "err", err)
		return
	}
	for _, name := range names {
		path := filepath.Join(node.RemoteDeletes, name)
		switch {
		case ctx.Err() != nil:
			return
		case strings.HasSuffix(name, ".tmp"):
			// A write a crash cut short: the partition's removal had not
			// begun, and starts over (with its entry) at the restart.
			_ = node.FS.Remove(path)
			continue
		}
		if err := deleteForgotten(ctx, node, path); err != nil {
			node.Logger.Warn("broker: delete a deleted topic's remote objects (the next tier pass retries)", "entry", name, "err", err)
		}
	}
}

func deleteForgotten(ctx context.Context, node *Node, path string) error {
	data, err := vfs.ReadFile(node.FS, path)
	if err != nil {
		return err
	}
	var d remoteDelete
	if err := json.Unmarshal(data, &d); err != nil || d.Topic == "" || d.TopicID == "" {
		return fmt.Errorf("an unreadable entry is left for an operator (%q): %v", data, err)
	}
	if err := node.Tier.Partition(d.Topic, d.TopicID, int32(d.Partition), nil).DeleteAll(ctx); err != nil {
		return err
	}
	node.Logger.Info("broker: deleted a deleted topic's remote objects", "topic", d.Topic, "topic_id", d.TopicID, "partition", d.Partition)
	return dropEntry(node, path)
}

// dropEntry removes a journal entry whose objects are deleted.
func dropEntry(node *Node, path string) error {
	if err := node.FS.Remove(path); err != nil {
		return err
	}
	return node.FS.SyncDir(node.RemoteDeletes)
}
