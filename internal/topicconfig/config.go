package topicconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/compact"
	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/share"
	"github.com/strandmq/strand/internal/txn"
)

// Topic config names, as Kafka spells them. Strand's own carry the strand.
// prefix.
const (
	ConfigCleanupPolicy        = "cleanup.policy"
	ConfigCompressionType      = "compression.type"
	ConfigDeleteRetentionMs    = "delete.retention.ms"
	ConfigFlushMessages        = "flush.messages"
	ConfigFlushMs              = "flush.ms"
	ConfigIndexIntervalBytes   = "index.interval.bytes"
	ConfigMaxMessageBytes      = "max.message.bytes"
	ConfigMessageTimestampType = "message.timestamp.type"
	ConfigMinInsyncReplicas    = "min.insync.replicas"
	ConfigRetentionBytes       = "retention.bytes"
	ConfigRetentionMs          = "retention.ms"
	ConfigSegmentBytes         = "segment.bytes"
	ConfigSegmentMs            = "segment.ms"
	ConfigRetentionRecords     = "strand.retention.records"
	ConfigPageCacheWindow      = "strand.page.cache.window.bytes"
	ConfigPreallocate          = "preallocate"
)

// ConfigType is a config's value type, as DescribeConfigs v3+ reports it.
type ConfigType int8

// Kafka's config types (the subset topic configs use).
const (
	TypeBoolean ConfigType = 1
	TypeString  ConfigType = 2
	TypeInt     ConfigType = 3
	TypeLong    ConfigType = 5
	TypeList    ConfigType = 7
)

// ConfigDef describes one topic config: its name, default, type and the
// check a value must pass.
type ConfigDef struct {
	Name    string
	Default string
	Type    ConfigType
	Doc     string
	check   func(string) (string, error) // returns the normalised value
}

// IsList reports whether the config is a comma-separated list (so that
// IncrementalAlterConfigs may APPEND or SUBTRACT).
func (d *ConfigDef) IsList() bool { return d.Type == TypeList }

const maxLongText = "9223372036854775807"

var configDefs = []*ConfigDef{
	{Name: ConfigCleanupPolicy, Default: "delete", Type: TypeList, check: checkCleanupPolicy,
		Doc: "delete (time and size retention), compact (the background cleaner keeps the latest record per key) or both. A compacted topic refuses records without a key at produce (INVALID_RECORD), as Kafka does."},
	{Name: ConfigCompressionType, Default: "producer", Type: TypeString,
		check: checkEnum("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
		Doc:   "Strand always keeps batches as the producer compressed them (producer); other values are stored but not applied."},
	{Name: ConfigDeleteRetentionMs, Default: "86400000", Type: TypeLong, check: checkLong(0, math.MaxInt64),
		Doc: "How long a compacted topic keeps a tombstone after the cleaner first kept it."},
	{Name: ConfigFlushMessages, Default: maxLongText, Type: TypeLong, check: checkLong(1, math.MaxInt64),
		Doc: "fsync after this many records; the default leaves durability to the page cache, as Kafka does."},
	{Name: ConfigFlushMs, Default: maxLongText, Type: TypeLong, check: checkLong(0, math.MaxInt64),
		Doc: "fsync when the last fsync is this old."},
	{Name: ConfigIndexIntervalBytes, Default: "4096", Type: TypeInt, check: checkLong(0, math.MaxInt32),
		Doc: "Log bytes between offset-index entries."},
	{Name: ConfigMaxMessageBytes, Default: "1048588", Type: TypeInt, check: checkLong(0, math.MaxInt32),
		Doc: "Largest record batch a producer may send, in bytes."},
	{Name: ConfigMessageTimestampType, Default: "CreateTime", Type: TypeString,
		check: checkEnum("CreateTime", "LogAppendTime"),
		Doc:   "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the broker's clock."},
	{Name: ConfigMinInsyncReplicas, Default: "1", Type: TypeInt, check: checkLong(1, math.MaxInt32),
		Doc: "acks=all fails with NOT_ENOUGH_REPLICAS while fewer replicas are in sync."},
	{Name: ConfigRetentionBytes, Default: "-1", Type: TypeLong, check: checkLong(-1, math.MaxInt64),
		Doc: "Delete the oldest segments while a partition is larger than this; -1: no limit."},
	{Name: ConfigRetentionMs, Default: "604800000", Type: TypeLong, check: checkLong(-1, math.MaxInt64),
		Doc: "Delete segments whose newest record is older than this; -1: keep forever."},
	{Name: ConfigSegmentBytes, Default: "1073741824", Type: TypeInt, check: checkLong(14, math.MaxInt32),
		Doc: "Roll the active segment at this size."},
	{Name: ConfigSegmentMs, Default: "604800000", Type: TypeLong, check: checkLong(1, math.MaxInt64),
		Doc: "Roll the active segment once it is this old."},
	{Name: cluster.UncleanLeaderElection, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "In a cluster: when no in-sync replica can lead, let an out-of-sync one (losing what only the ISR had; logged at ERROR). Off, the partition waits for an in-sync replica to return."},
	{Name: cluster.LeaderThrottledReplicas, Default: "", Type: TypeList, check: checkThrottledReplicas,
		Doc: "Replicas whose leader throttles what it serves to them while they are out of sync, at its leader.replication.throttled.rate: partition:broker pairs (the broker serving), or * for all."},
	{Name: cluster.FollowerThrottledReplicas, Default: "", Type: TypeList, check: checkThrottledReplicas,
		Doc: "Replicas that fetch no faster than their broker's follower.replication.throttled.rate while out of sync: partition:broker pairs, or * for all. A completed reassignment removes its partition's pairs."},
	{Name: ConfigRetentionRecords, Default: "-1", Type: TypeLong, check: checkRetentionRecords,
		Doc: "Strand: keep only the newest N offsets (the seed's retain_count); -1: no limit."},
	{Name: ConfigPageCacheWindow, Default: strconv.Itoa(partlog.DefaultCacheWindow), Type: TypeLong, check: checkLong(-1, math.MaxInt64),
		Doc: "Strand: bytes behind the active segment's end kept in the page cache; older written bytes are handed to the disk and dropped from the cache as the log grows (reads of them go to the disk). -1 or 0: leave every byte to the page cache, as Kafka does."},
	{Name: ConfigPreallocate, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "Reserve the active segment's disk blocks 32 MiB ahead of its end (fallocate, the file's size unchanged), so that appends skip the file system's block allocation page by page; a segment's reserve past its end is released when it is sealed. Kafka reserves whole segments."},
}

func (c Config) preallocate() bool {
	v, _ := c.Get(ConfigPreallocate)
	return v == "true"
}

// configDefs also holds the validation and compaction configs.
func init() {
	configDefs = append(configDefs, ingestConfigDefs...)
	for _, d := range ingestConfigDefs {
		configByName[d.Name] = d
	}
	configDefs = append(configDefs, tieredConfigDefs...)
	for _, d := range tieredConfigDefs {
		configByName[d.Name] = d
	}
	configDefs = append(configDefs, compactionConfigDefs...)
	for _, d := range compactionConfigDefs {
		configByName[d.Name] = d
	}
	slices.SortFunc(configDefs, func(x, y *ConfigDef) int { return strings.Compare(x.Name, y.Name) })
}

var configByName = func() map[string]*ConfigDef {
	m := make(map[string]*ConfigDef, len(configDefs))
	for _, d := range configDefs {
		m[d.Name] = d
	}
	return m
}()

// ConfigDefs returns the definitions of every topic config Strand knows, in
// name order.
func ConfigDefs() []*ConfigDef { return slices.Clone(configDefs) }

// LookupConfig returns the definition of a topic config.
func LookupConfig(name string) (*ConfigDef, bool) {
	d, ok := configByName[name]
	return d, ok
}

func checkLong(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return "", errInvalidValue("not an integer")
		}
		if n < lo || n > hi {
			return "", errInvalidValue("must be in [" + strconv.FormatInt(lo, 10) + ", " + strconv.FormatInt(hi, 10) + "]")
		}
		return strconv.FormatInt(n, 10), nil
	}
}

func checkEnum(allowed ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		v = strings.TrimSpace(v)
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				return a, nil
			}
		}
		return "", errInvalidValue("must be one of " + strings.Join(allowed, ", "))
	}
}

func checkCleanupPolicy(v string) (string, error) {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p != "delete" && p != "compact" {
			return "", errInvalidValue("each policy must be delete or compact")
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return "", errInvalidValue("empty policy")
	}
	return strings.Join(out, ","), nil
}

func checkThrottledReplicas(v string) (string, error) {
	if err := cluster.CheckThrottledReplicas(v); err != nil {
		return "", errInvalidValue(err.Error())
	}
	return strings.ReplaceAll(v, " ", ""), nil
}

func checkRetentionRecords(v string) (string, error) {
	n, err := checkLong(-1, math.MaxInt64)(v)
	if err != nil {
		return "", err
	}
	if n == "0" {
		return "", errInvalidValue("must be -1 (no limit) or at least 1")
	}
	return n, nil
}

type valueError string

func (e valueError) Error() string { return string(e) }

func errInvalidValue(reason string) error { return valueError(reason) }

// TimestampType says where a topic's record timestamps come from.
type TimestampType int8

// The two timestamp types of message.timestamp.type.
const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

// Config is a topic's effective configuration: defaults, overridden by
// broker-wide defaults, overridden by the topic's own settings. It is an
// immutable value.
type Config struct {
	overrides map[string]string // the topic's own settings, normalised
	defaults  map[string]string // broker-level defaults (Config.TopicDefaults)
	validator *ingest.Validator // compiled from the strand.validation configs; nil: none
}

// Parse validates and normalises a set of topic settings.
func Parse(in map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(in))
	for name, v := range in {
		d, ok := configByName[name]
		if !ok {
			return nil, &ConfigError{Name: name, Reason: "unknown topic config"}
		}
		norm, err := d.check(v)
		if err != nil {
			return nil, &ConfigError{Name: name, Value: v, Reason: err.Error()}
		}
		out[name] = norm
	}
	return out, nil
}

func New(overrides, defaults map[string]string) (Config, error) {
	o, err := Parse(overrides)
	if err != nil {
		return Config{}, err
	}
	tc := Config{overrides: o, defaults: defaults}
	if err := tc.compileValidator(); err != nil {
		return Config{}, err
	}
	return tc, nil
}

// Get returns the effective value of a config and where it comes from.
func (c Config) Get(name string) (value string, source ConfigSource) {
	if v, ok := c.overrides[name]; ok {
		return v, SourceTopic
	}
	if v, ok := c.defaults[name]; ok {
		return v, SourceBroker
	}
	if d, ok := configByName[name]; ok {
		return d.Default, SourceDefault
	}
	return "", SourceUnknown
}

// Overrides returns a copy of the topic's own settings.
func (c Config) Overrides() map[string]string { return maps.Clone(c.overrides) }

// Long returns an integer config's effective value.
func (c Config) Long(name string) int64 {
	v, _ := c.Get(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// MaxMessageBytes is max.message.bytes.
func (c Config) MaxMessageBytes() int { return int(c.Long(ConfigMaxMessageBytes)) }

// MinInsyncReplicas is min.insync.replicas.
func (c Config) MinInsyncReplicas() int { return int(c.Long(ConfigMinInsyncReplicas)) }

// TimestampType is message.timestamp.type.
func (c Config) TimestampType() TimestampType {
	if v, _ := c.Get(ConfigMessageTimestampType); v == "LogAppendTime" {
		return LogAppendTime
	}
	return CreateTime
}

// LogConfig translates Kafka's config values into partlog's. partlog reads a
// zero as "default", so Kafka's meaningful zeros become the smallest
// positive value, and Kafka's Long.MAX "never" becomes partlog's zero.
func (c Config) LogConfig(now func() time.Time, logger *slog.Logger) partlog.Config {
	ms := func(n int64) time.Duration {
		if n == 0 {
			return time.Nanosecond
		}
		if n > math.MaxInt64/int64(time.Millisecond) {
			return 0 // effectively never: partlog's zero
		}
		return time.Duration(n) * time.Millisecond
	}
	cfg := partlog.Config{
		SegmentBytes:       c.Long(ConfigSegmentBytes),
		SegmentTime:        ms(c.Long(ConfigSegmentMs)),
		RetentionRecords:   c.Long(ConfigRetentionRecords),
		CacheWindow:        max(c.Long(ConfigPageCacheWindow), -1),
		IndexIntervalBytes: max(c.Long(ConfigIndexIntervalBytes), 1),
		Preallocate:        c.preallocate(),
		Now:                now,
		Logger:             logger,
	}
	if n := c.Long(ConfigRetentionMs); n < 0 {
		cfg.RetentionTime = -1
	} else {
		cfg.RetentionTime = ms(n)
		if cfg.RetentionTime == 0 {
			cfg.RetentionTime = -1
		}
	}
	if n := c.Long(ConfigRetentionBytes); n < 0 {
		cfg.RetentionBytes = -1
	} else {
		cfg.RetentionBytes = max(n, 1)
	}
	if !c.HasPolicy("delete") { // compact only: no time or size retention, as in Kafka
		cfg.RetentionTime, cfg.RetentionBytes = -1, -1
	}
	if n := c.Long(ConfigFlushMessages); n != math.MaxInt64 {
		cfg.FlushMessages = n
	}
	if n := c.Long(ConfigFlushMs); n != math.MaxInt64 {
		cfg.FlushInterval = ms(n)
	}
	if cfg.CacheWindow == 0 {
		cfg.CacheWindow = -1 // off; partlog reads a zero as its default
	}
	c.tieredLogConfig(&cfg)
	return cfg
}

// ConfigSource says where an effective config value comes from; the values
// are DescribeConfigs v1+'s config sources.
type ConfigSource int8

// Config sources.
const (
	SourceUnknown ConfigSource = 0
	SourceTopic   ConfigSource = 1 // DYNAMIC_TOPIC_CONFIG
	SourceBroker  ConfigSource = 4 // STATIC_BROKER_CONFIG
	SourceDefault ConfigSource = 5 // DEFAULT_CONFIG
)

// ConfigEntry is one config as DescribeConfigs reports it.
type ConfigEntry struct {
	Name   string
	Value  string
	Source ConfigSource
	Type   ConfigType
	Doc    string
	// Synonyms lists the values this one overrides, most specific first
	// (the broker default, then Kafka's default), as Kafka reports them.
	Synonyms []ConfigSynonym
}

// ConfigSynonym is a lower-precedence value of a config.
type ConfigSynonym struct {
	Name   string
	Value  string
	Source ConfigSource
}

// Entries returns every topic config with its effective value, in name order.
func (c Config) Entries() []ConfigEntry {
	out := make([]ConfigEntry, 0, len(configDefs))
	for _, d := range configDefs {
		v, src := c.Get(d.Name)
		e := ConfigEntry{Name: d.Name, Value: v, Source: src, Type: d.Type, Doc: d.Doc}
		if ov, ok := c.overrides[d.Name]; ok {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Name, Value: ov, Source: SourceTopic})
		}
		if bv, ok := c.defaults[d.Name]; ok {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Name, Value: bv, Source: SourceBroker})
		}
		e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Name, Value: d.Default, Source: SourceDefault})
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// AlterOp is an IncrementalAlterConfigs operation.
type AlterOp int8

// The operations of IncrementalAlterConfigs, with Kafka's numbering.
const (
	OpSet      AlterOp = 0
	OpDelete   AlterOp = 1
	OpAppend   AlterOp = 2
	OpSubtract AlterOp = 3
)

// ConfigChange is one IncrementalAlterConfigs operation on one config.
type ConfigChange struct {
	Name  string
	Op    AlterOp
	Value string
}

// Apply applies incremental changes to a copy of overrides and
// returns the result (not yet validated).
func Apply(c Config, changes []ConfigChange) (map[string]string, error) {
	out := maps.Clone(c.overrides)
	if out == nil {
		out = map[string]string{}
	}
	for _, ch := range changes {
		d, ok := configByName[ch.Name]
		if !ok {
			return nil, &ConfigError{Name: ch.Name, Reason: "unknown topic config"}
		}
		switch ch.Op {
		case OpSet:
			out[ch.Name] = ch.Value
		case OpDelete:
			delete(out, ch.Name)
		case OpAppend, OpSubtract:
			if !d.IsList() {
				return nil, &ConfigError{Name: ch.Name, Reason: "APPEND and SUBTRACT apply only to list configs"}
			}
			cur, _ := c.Get(ch.Name)
			if v, ok := out[ch.Name]; ok {
				cur = v
			}
			out[ch.Name] = editList(cur, ch.Value, ch.Op == OpAppend)
		default:
			return nil, &ConfigError{Name: ch.Name, Reason: "unknown operation " + strconv.Itoa(int(ch.Op))}
		}
	}
	return out, nil
}

func editList(cur, change string, add bool) string {
	var items []string
	for s := range strings.SplitSeq(cur, ",") {
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	for s := range strings.SplitSeq(change, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		i := slices.Index(items, s)
		switch {
		case add && i < 0:
			items = append(items, s)
		case !add && i >= 0:
			items = slices.Delete(items, i, i+1)
		}
	}
	return strings.Join(items, ",")
}

// TypeDouble is Kafka's DOUBLE config type.
const TypeDouble ConfigType = 6

var compactionConfigDefs = []*ConfigDef{
	{Name: ConfigMinCleanableDirtyRatio, Default: "0.5", Type: TypeDouble, check: checkRatio,
		Doc: "Clean a compacted partition once this share of its sealed bytes has not been cleaned yet."},
	{Name: ConfigMinCompactionLagMs, Default: "0", Type: TypeLong, check: checkLong(0, math.MaxInt64),
		Doc: "Keep a record out of compaction until it is at least this old (its segment's newest record)."},
	{Name: ConfigMaxCompactionLagMs, Default: maxLongText, Type: TypeLong, check: checkLong(1, math.MaxInt64),
		Doc: "Clean a compacted partition, whatever its dirty ratio, once a dirty segment's newest record is this old."},
}

func checkRatio(v string) (string, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f > 1 {
		return "", errInvalidValue("must be a number in [0, 1]")
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// HasPolicy reports whether cleanup.policy lists p ("delete" or "compact").
func (c Config) HasPolicy(p string) bool {
	v, _ := c.Get(ConfigCleanupPolicy)
	for s := range strings.SplitSeq(v, ",") { // no allocation: it runs per produce
		if s == p {
			return true
		}
	}
	return false
}

// Compacted reports whether cleanup.policy includes compact.
func (c Config) Compacted() bool { return c.HasPolicy("compact") }

// CompactPolicy translates the topic's compaction configs for the cleaner.
func (c Config) CompactPolicy() compact.Policy {
	ms := func(n int64) time.Duration {
		if n > math.MaxInt64/int64(time.Millisecond) {
			return math.MaxInt64
		}
		return time.Duration(n) * time.Millisecond
	}
	ratio, _ := c.Get(ConfigMinCleanableDirtyRatio)
	r, _ := strconv.ParseFloat(ratio, 64)
	p := compact.Policy{
		DeleteRetention:  ms(c.Long(ConfigDeleteRetentionMs)),
		MinDirtyRatio:    r,
		MinCompactionLag: ms(c.Long(ConfigMinCompactionLagMs)),
		SegmentBytes:     c.Long(ConfigSegmentBytes),
	}
	if n := c.Long(ConfigMaxCompactionLagMs); n != math.MaxInt64 {
		p.MaxCompactionLag = ms(n)
	}
	return p
}

// ingestConfigDefs are appended to configDefs.
var ingestConfigDefs = []*ConfigDef{
	{Name: ConfigValidation, Default: string(ingest.ModeNone), Type: TypeString,
		check: checkEnum(string(ingest.ModeNone), string(ingest.ModeJSON), string(ingest.ModeJSONSchema), string(ingest.ModeSchema)),
		Doc:   "Strand: validate records at ingress: none, json (the value must be a JSON document), jsonschema (it must satisfy strand.validation.schema) or schema (Confluent wire format: a schema id of the built-in registry, of the topic's subject, and a payload that decodes against it). Invalid records go to strand.dlq.topic (or, with strand.validation.action=reject, fail the batch)."},
	{Name: ConfigValidationKey, Default: "none", Type: TypeString, check: checkEnum("none", "schema"),
		Doc: "Strand: with strand.validation=schema, schema also checks each non-null key against the registry (subject <topic>-key under TopicNameStrategy)."},
	{Name: ConfigValidationStrategy, Default: string(ingest.TopicName), Type: TypeString, check: checkStrategy,
		Doc: "Strand: the subject a schema id must belong to with strand.validation=schema: TopicNameStrategy (<topic>-value), RecordNameStrategy (the record's full name) or TopicRecordNameStrategy (<topic>-<record name>)."},
	{Name: ConfigValidationAction, Default: string(ingest.ActionDLQ), Type: TypeString, check: checkEnum(string(ingest.ActionDLQ), string(ingest.ActionReject)),
		Doc: "Strand: what happens to an invalid record: dlq (to strand.dlq.topic with its reason; the producer is not failed, its offset is a gap) or reject (the whole batch fails with INVALID_RECORD and one error per invalid record)."},
	{Name: ConfigValidationSchema, Default: "", Type: TypeString, check: checkSchema,
		Doc: "Strand: the JSON Schema (text) of strand.validation=jsonschema; references must stay inside it."},
	{Name: ConfigValidationKeyRequired, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "Strand: quarantine records with a null or empty key."},
	{Name: ConfigDLQTopic, Default: "", Type: TypeString, check: checkDLQTopic,
		Doc: "Strand: the topic invalid records go to; empty: <topic>.dlq, created on first use with the topic's partition count."},
}

func checkSchema(v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", nil
	}
	if _, err := ingest.Compile(ingest.Spec{Mode: ingest.ModeJSONSchema, Schema: v}); err != nil {
		return "", errInvalidValue(err.Error())
	}
	return v, nil
}

func checkStrategy(v string) (string, error) {
	s, err := ingest.ParseStrategy(v)
	if err != nil {
		return "", errInvalidValue(err.Error())
	}
	return string(s), nil
}

func checkDLQTopic(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if err := validateTopicName(v); err != nil {
		return "", errInvalidValue(err.Error())
	}
	if IsInternalTopic(v) {
		return "", errInvalidValue("an internal topic cannot be a DLQ")
	}
	return v, nil
}

// ValidationSpec returns the topic's validation settings.
func (c Config) ValidationSpec() ingest.Spec {
	mode, _ := c.Get(ConfigValidation)
	schema, _ := c.Get(ConfigValidationSchema)
	key, _ := c.Get(ConfigValidationKeyRequired)
	spec := ingest.Spec{Mode: ingest.Mode(mode), Schema: schema, KeyRequired: key == "true"}
	if action, _ := c.Get(ConfigValidationAction); action != "" {
		spec.Action = ingest.Action(action)
	}
	if spec.Mode == ingest.ModeSchema {
		spec.Schema = "" // strand.validation.schema is jsonschema's
		keys, _ := c.Get(ConfigValidationKey)
		strategy, _ := c.Get(ConfigValidationStrategy)
		spec.KeySchema, spec.Strategy = keys == "schema", ingest.Strategy(strategy)
	}
	return spec
}

// DLQTopic returns the name of the topic's DLQ.
func (c Config) DLQTopic(topic string) string {
	if v, _ := c.Get(ConfigDLQTopic); v != "" {
		return v
	}
	return ingest.DefaultDLQTopic(topic)
}

// Validator returns the topic's compiled validator (nil: no validation).
func (c Config) Validator() *ingest.Validator { return c.validator }

// compileValidator compiles the config's validator once per config change
// (ingest caches compiled Specs, so partitions and topics with the same
// settings share one).
func (c *Config) compileValidator() error {
	v, err := ingest.Compile(c.ValidationSpec())
	if err != nil {
		name := ConfigValidation
		if c.ValidationSpec().Mode == ingest.ModeJSONSchema {
			name = ConfigValidationSchema
		}
		return &ConfigError{Name: name, Reason: err.Error()}
	}
	c.validator = v
	return nil
}

// ValidateTopicName returns an error wrapping ErrInvalidTopic unless name
// is a legal Kafka topic name.
func ValidateTopicName(name string) error { return validateTopicName(name) }

func validateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > MaxTopicNameLen:
		return fmt.Errorf("%w: longer than %d characters", ErrInvalidTopic, MaxTopicNameLen)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains a character other than ASCII alphanumerics, '.', '_' and '-'", ErrInvalidTopic, name)
		}
	}
	return nil
}

// ConfigError says which config is wrong and why. It matches ErrInvalidConfig.
type ConfigError struct {
	Name   string
	Value  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("broker: config %s: %s", e.Name, e.Reason)
	}
	return fmt.Sprintf("broker: config %s=%q: %s", e.Name, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidConfig) hold.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Compaction topic configs (cleanup.policy and delete.retention.ms are in
// config.go).
const (
	ConfigMinCleanableDirtyRatio = "min.cleanable.dirty.ratio"
	ConfigMinCompactionLagMs     = "min.compaction.lag.ms"
	ConfigMaxCompactionLagMs     = "max.compaction.lag.ms"
)

// Validation topic config names.
const (
	ConfigValidation            = "strand.validation"
	ConfigValidationSchema      = "strand.validation.schema"
	ConfigValidationKeyRequired = "strand.validation.key.required"
	ConfigDLQTopic              = "strand.dlq.topic"
	ConfigValidationKey         = "strand.validation.key"
	ConfigValidationStrategy    = "strand.validation.subject.strategy"
	ConfigValidationAction      = "strand.validation.action"
)

// MaxTopicNameLen is Kafka's limit (249: room for the partition suffix in
// a 255-byte file name).
const MaxTopicNameLen = 249

// Sentinel errors of topic names and configs (package broker re-exports
// them; the wire layer maps them to Kafka's error codes).
var (
	// ErrInvalidTopic: the name is not a legal Kafka topic name.
	ErrInvalidTopic = errors.New("broker: invalid topic name")
	// ErrInvalidConfig: an unknown config name or an invalid value; see
	// ConfigError.
	ErrInvalidConfig = errors.New("broker: invalid config")
)

// The node's internal topics: its own records, which clients may read but
// not write, delete or misconfigure.
const (
	ConsumerOffsetsTopic  = "__consumer_offsets"
	TransactionStateTopic = txn.LogTopic
	SchemasTopic          = "_schemas"
	ShareStateTopic       = share.StateTopic
)

// IsInternalTopic reports whether a topic is one of the node's own (listed
// with IsInternal in Metadata; it cannot be deleted, and clients cannot
// produce to it).
func IsInternalTopic(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic || name == SchemasTopic || name == ShareStateTopic
}
