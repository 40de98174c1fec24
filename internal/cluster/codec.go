package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A raft log entry is one batch of records, applied atomically. Each
// record is {type, version, data}, in JSON (metadata is small; a dump is
// readable; decoding is strict). A node that meets a type or version it
// does not know must not skip it — that would fork its state from its
// peers' — so the FSM fails loudly instead (REPLICATION.md §1.3).
type envelope struct {
	Type    string          `json:"type"`
	Version int             `json:"version"`
	Data    json.RawMessage `json:"data"`
}

type batch struct {
	Records []envelope `json:"records"`
}

// ClusterInit names the cluster; the first controller writes it once.
type ClusterInit struct{ ClusterID string }

func (r ClusterInit) apply(im *Image, _ int64) error {
	switch {
	case r.ClusterID == "":
		return fmt.Errorf("%w: empty cluster id", ErrConflict)
	case im.clusterID != "" && im.clusterID != r.ClusterID:
		return fmt.Errorf("%w: cluster %s, not %s", ErrConflict, im.clusterID, r.ClusterID)
	}
	im.clusterID = r.ClusterID
	return nil
}

const recordVersion = 1

// recordType names each record type on the wire.
func recordType(r Record) (string, error) {
	switch r.(type) {
	case ClusterInit:
		return "cluster_init", nil
	case PutTopic:
		return "put_topic", nil
	case RemoveTopic:
		return "remove_topic", nil
	case ForgetDeleted:
		return "forget_deleted", nil
	case RegisterBroker:
		return "register_broker", nil
	case BrokerRegistrationChange:
		return "broker_registration_change", nil
	case UnregisterBroker:
		return "unregister_broker", nil
	case Partition:
		return "partition", nil
	case PartitionChange:
		return "partition_change", nil
	}
	return "", fmt.Errorf("cluster: no codec for %T", r)
}

// EncodeRecords encodes one batch of records.
func EncodeRecords(recs []Record) ([]byte, error) {
	var b batch
	for _, r := range recs {
		typ, err := recordType(r)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		b.Records = append(b.Records, envelope{Type: typ, Version: recordVersion, Data: data})
	}
	return json.Marshal(b)
}

// DecodeRecords decodes a batch EncodeRecords wrote; any unknown type,
// version or field is an error.
func DecodeRecords(data []byte) ([]Record, error) {
	var b batch
	if err := strict(data, &b); err != nil {
		return nil, fmt.Errorf("cluster: decode batch: %w", err)
	}
	out := make([]Record, 0, len(b.Records))
	for _, e := range b.Records {
		if e.Version != recordVersion {
			return nil, fmt.Errorf("cluster: record %q version %d is unknown", e.Type, e.Version)
		}
		var r Record
		var err error
		switch e.Type {
		case "cluster_init":
			var x ClusterInit
			err, r = strict(e.Data, &x), &x
		case "put_topic":
			var x PutTopic
			err, r = strict(e.Data, &x), &x
		case "remove_topic":
			var x RemoveTopic
			err, r = strict(e.Data, &x), &x
		case "forget_deleted":
			var x ForgetDeleted
			err, r = strict(e.Data, &x), &x
		case "register_broker":
			var x RegisterBroker
			err, r = strict(e.Data, &x), &x
		case "broker_registration_change":
			var x BrokerRegistrationChange
			err, r = strict(e.Data, &x), &x
		case "unregister_broker":
			var x UnregisterBroker
			err, r = strict(e.Data, &x), &x
		case "partition":
			var x Partition
			err, r = strict(e.Data, &x), &x
		case "partition_change":
			var x PartitionChange
			err, r = strict(e.Data, &x), &x
		default:
			return nil, fmt.Errorf("cluster: record type %q is unknown", e.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: decode %s: %w", e.Type, err)
		}
		out = append(out, deref(r))
	}
	return out, nil
}

// deref turns the pointer a record was decoded into back into a value.
func deref(r Record) Record {
	switch x := r.(type) {
	case *ClusterInit:
		return *x
	case *PutTopic:
		return *x
	case *RemoveTopic:
		return *x
	case *ForgetDeleted:
		return *x
	case *RegisterBroker:
		return *x
	case *BrokerRegistrationChange:
		return *x
	case *UnregisterBroker:
		return *x
	case *Partition:
		return *x
	case *PartitionChange:
		return *x
	}
	return r
}

func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}
