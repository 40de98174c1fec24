package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
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

// codecs names each record type on the wire and decodes it. Adding a
// record means adding it here, nowhere else.
var codecs = map[string]func([]byte) (Record, error){
	"cluster_init":               decodeAs[ClusterInit],
	"put_topic":                  decodeAs[PutTopic],
	"remove_topic":               decodeAs[RemoveTopic],
	"forget_deleted":             decodeAs[ForgetDeleted],
	"register_broker":            decodeAs[RegisterBroker],
	"broker_registration_change": decodeAs[BrokerRegistrationChange],
	"unregister_broker":          decodeAs[UnregisterBroker],
	"partition":                  decodeAs[Partition],
	"partition_change":           decodeAs[PartitionChange],
	"producer_id_block":          decodeAs[ProducerIDBlock],
	"put_acls":                   decodeAs[PutACLs],
	"put_scram_credential":       decodeAs[PutScramCredential],
	"delete_scram_credential":    decodeAs[DeleteScramCredential],
	"alter_client_quota":         decodeAs[AlterClientQuota],
	"finalize_feature":           decodeAs[FinalizeFeature],
	"drain_broker":               decodeAs[DrainBroker],
	"broker_config":              decodeAs[BrokerConfig],
	"alter_group_config":         decodeAs[AlterGroupConfig],
}

// typeNames is codecs' key for each record type.
var typeNames = func() map[reflect.Type]string {
	m := make(map[reflect.Type]string, len(codecs))
	for name, decode := range codecs {
		r, _ := decode([]byte("{}"))
		m[reflect.TypeOf(r)] = name
	}
	return m
}()

func decodeAs[R Record](data []byte) (Record, error) {
	var r R
	err := UnmarshalStrict(data, &r)
	return r, err
}

// EncodeRecords encodes one batch of records.
func EncodeRecords(recs []Record) ([]byte, error) {
	var b batch
	for _, r := range recs {
		typ, ok := typeNames[reflect.TypeOf(r)]
		if !ok {
			return nil, fmt.Errorf("cluster: no codec for %T", r)
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
	if err := UnmarshalStrict(data, &b); err != nil {
		return nil, fmt.Errorf("cluster: decode batch: %w", err)
	}
	out := make([]Record, 0, len(b.Records))
	for _, e := range b.Records {
		decode, ok := codecs[e.Type]
		if !ok {
			return nil, fmt.Errorf("cluster: record type %q is unknown", e.Type)
		}
		if e.Version != recordVersion {
			return nil, fmt.Errorf("cluster: record %q version %d is unknown", e.Type, e.Version)
		}
		r, err := decode(e.Data)
		if err != nil {
			return nil, fmt.Errorf("cluster: decode %s: %w", e.Type, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// UnmarshalStrict decodes JSON data into v refusing unknown fields and
// trailing data: a record or controller RPC from a newer build is an
// error, never half read.
func UnmarshalStrict(data []byte, v any) error {
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
