package topicconfig

import (
	"math"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/tiered"
)

// Topic configs of tiered storage, as Kafka spells them.
const (
	ConfigRemoteStorageEnable      = "remote.storage.enable"
	ConfigLocalRetentionMs         = "local.retention.ms"
	ConfigLocalRetentionBytes      = "local.retention.bytes"
	ConfigRemoteLogDeleteOnDisable = "remote.log.delete.on.disable"
	ConfigRemoteLogCopyDisable     = "remote.log.copy.disable"
)

var tieredConfigDefs = []*ConfigDef{
	{Name: ConfigRemoteStorageEnable, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "Upload sealed segments to the broker's object store (tiered storage) and keep only local.retention.* on local disk. Needs the broker's object store; refused for compacted topics."},
	{Name: ConfigLocalRetentionMs, Default: "-2", Type: TypeLong, check: checkLong(-2, math.MaxInt64),
		Doc: "With remote.storage.enable: how long uploaded segments stay on local disk; -2: retention.ms. At most retention.ms."},
	{Name: ConfigLocalRetentionBytes, Default: "-2", Type: TypeLong, check: checkLong(-2, math.MaxInt64),
		Doc: "With remote.storage.enable: how many bytes of uploaded segments stay on local disk per partition; -2: retention.bytes. At most retention.bytes."},
	{Name: ConfigRemoteLogDeleteOnDisable, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "Must be true, with remote.storage.enable=false, to turn tiered storage off for a topic: its remote data is then deleted."},
	{Name: ConfigRemoteLogCopyDisable, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "With remote.storage.enable: stop uploading (the remote data stays readable and expires by retention.*); local data then follows retention.ms and retention.bytes, not local.retention.*."},
}

// RemoteStorage reports remote.storage.enable.
func (c Config) RemoteStorage() bool {
	v, _ := c.Get(ConfigRemoteStorageEnable)
	return v == "true"
}

// RemoteCopyDisabled reports remote.log.copy.disable (Kafka 3.9, KIP-950):
// a tiered topic whose remote data is read-only.
func (c Config) RemoteCopyDisabled() bool {
	v, _ := c.Get(ConfigRemoteLogCopyDisable)
	return v == "true"
}

// CheckTiered makes Kafka's checks (LogConfig.validate): a topic may
// enable remote storage only when the node has an object store (haveTier)
// and the topic is not compacted; local retention may not exceed the
// total, nor be unlimited under a limited total; and a topic that had it
// on may turn it off only with remote.log.delete.on.disable=true. prev is
// nil at creation.
func CheckTiered(prev *Config, next Config, haveTier bool) error {
	if !next.RemoteStorage() {
		if prev != nil && prev.RemoteStorage() {
			if v, _ := next.Get(ConfigRemoteLogDeleteOnDisable); v != "true" {
				return &ConfigError{Name: ConfigRemoteStorageEnable, Value: "false", Reason: "it is invalid to disable remote storage without deleting remote data: set remote.log.delete.on.disable=true as well"}
			}
		}
		return nil
	}
	if !haveTier {
		return &ConfigError{Name: ConfigRemoteStorageEnable, Value: "true", Reason: "tiered storage is disabled on this broker (no --tier-endpoint): topics cannot be configured with remote log storage"}
	}
	if next.HasPolicy("compact") {
		return &ConfigError{Name: ConfigRemoteStorageEnable, Value: "true", Reason: "remote log storage is unsupported for compacted topics"}
	}
	for _, pair := range [][2]string{{ConfigLocalRetentionBytes, ConfigRetentionBytes}, {ConfigLocalRetentionMs, ConfigRetentionMs}} {
		local, total := next.Long(pair[0]), next.Long(pair[1])
		if total == -1 || local == -2 {
			continue
		}
		if local == -1 {
			return &ConfigError{Name: pair[0], Value: "-1", Reason: "must not be -1 as " + pair[1] + " is " + strconv.FormatInt(total, 10)}
		}
		if local > total {
			return &ConfigError{Name: pair[0], Value: strconv.FormatInt(local, 10), Reason: "must not be more than " + pair[1] + " (" + strconv.FormatInt(total, 10) + ")"}
		}
	}
	return nil
}

// tieredLogConfig sets partlog's local retention from local.retention.*;
// it applies only while the partition's tier gate is set.
func (c Config) tieredLogConfig(cfg *partlog.Config) {
	if !c.RemoteStorage() {
		return
	}
	switch n := c.Long(ConfigLocalRetentionMs); {
	case n == -2: // the total: partlog's zero
	case n < 0:
		cfg.LocalRetentionTime = -1
	case n == 0:
		cfg.LocalRetentionTime = time.Nanosecond
	case n <= math.MaxInt64/int64(time.Millisecond):
		cfg.LocalRetentionTime = time.Duration(n) * time.Millisecond
	default:
		cfg.LocalRetentionTime = -1
	}
	switch n := c.Long(ConfigLocalRetentionBytes); {
	case n == -2:
	case n < 0:
		cfg.LocalRetentionBytes = -1
	default:
		cfg.LocalRetentionBytes = max(n, 1)
	}
	if !c.HasPolicy("delete") {
		cfg.LocalRetentionTime, cfg.LocalRetentionBytes = -1, -1
	}
}

// TotalRetention is retention.ms and retention.bytes for remote retention.
func (c Config) TotalRetention() tiered.Retention {
	r := tiered.Retention{TimeMs: c.Long(ConfigRetentionMs), Bytes: c.Long(ConfigRetentionBytes)}
	if r.TimeMs == math.MaxInt64 || r.TimeMs < 0 {
		r.TimeMs = -1
	}
	if !c.HasPolicy("delete") {
		r.TimeMs, r.Bytes = -1, -1
	}
	return r
}
