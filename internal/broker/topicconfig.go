package broker

import "github.com/strandmq/strand/internal/topicconfig"

// Topic configs (package topicconfig owns their names, defaults, types and
// checks) under the names the layers above have always used.
type (
	TopicConfig   = topicconfig.Config
	ConfigDef     = topicconfig.ConfigDef
	ConfigType    = topicconfig.ConfigType
	ConfigSource  = topicconfig.ConfigSource
	ConfigEntry   = topicconfig.ConfigEntry
	ConfigSynonym = topicconfig.ConfigSynonym
	ConfigChange  = topicconfig.ConfigChange
	AlterOp       = topicconfig.AlterOp
	TimestampType = topicconfig.TimestampType
	ConfigError   = topicconfig.ConfigError
)

// Topic config names, types, sources and operations.
const (
	ConfigCleanupPolicy          = topicconfig.ConfigCleanupPolicy
	ConfigCompressionType        = topicconfig.ConfigCompressionType
	ConfigDLQTopic               = topicconfig.ConfigDLQTopic
	ConfigDeleteRetentionMs      = topicconfig.ConfigDeleteRetentionMs
	ConfigFlushMessages          = topicconfig.ConfigFlushMessages
	ConfigFlushMs                = topicconfig.ConfigFlushMs
	ConfigIndexIntervalBytes     = topicconfig.ConfigIndexIntervalBytes
	ConfigMaxCompactionLagMs     = topicconfig.ConfigMaxCompactionLagMs
	ConfigMaxMessageBytes        = topicconfig.ConfigMaxMessageBytes
	ConfigMessageTimestampType   = topicconfig.ConfigMessageTimestampType
	ConfigMinCleanableDirtyRatio = topicconfig.ConfigMinCleanableDirtyRatio
	ConfigMinCompactionLagMs     = topicconfig.ConfigMinCompactionLagMs
	ConfigMinInsyncReplicas      = topicconfig.ConfigMinInsyncReplicas
	ConfigRetentionBytes         = topicconfig.ConfigRetentionBytes
	ConfigRetentionMs            = topicconfig.ConfigRetentionMs
	ConfigRetentionRecords       = topicconfig.ConfigRetentionRecords
	ConfigSegmentBytes           = topicconfig.ConfigSegmentBytes
	ConfigSegmentMs              = topicconfig.ConfigSegmentMs
	ConfigValidation             = topicconfig.ConfigValidation
	ConfigValidationAction       = topicconfig.ConfigValidationAction
	ConfigValidationKey          = topicconfig.ConfigValidationKey
	ConfigValidationKeyRequired  = topicconfig.ConfigValidationKeyRequired
	ConfigValidationSchema       = topicconfig.ConfigValidationSchema
	ConfigValidationStrategy     = topicconfig.ConfigValidationStrategy
	CreateTime                   = topicconfig.CreateTime
	LogAppendTime                = topicconfig.LogAppendTime
	OpAppend                     = topicconfig.OpAppend
	OpDelete                     = topicconfig.OpDelete
	OpSet                        = topicconfig.OpSet
	OpSubtract                   = topicconfig.OpSubtract
	SourceBroker                 = topicconfig.SourceBroker
	SourceDefault                = topicconfig.SourceDefault
	SourceTopic                  = topicconfig.SourceTopic
	SourceUnknown                = topicconfig.SourceUnknown
	TypeBoolean                  = topicconfig.TypeBoolean
	TypeDouble                   = topicconfig.TypeDouble
	TypeInt                      = topicconfig.TypeInt
	TypeList                     = topicconfig.TypeList
	TypeLong                     = topicconfig.TypeLong
	TypeString                   = topicconfig.TypeString
)

// ConfigDefs returns the definitions of every topic config Strand knows, in
// name order.
func ConfigDefs() []*ConfigDef { return topicconfig.ConfigDefs() }

// LookupConfig returns the definition of a topic config.
func LookupConfig(name string) (*ConfigDef, bool) { return topicconfig.LookupConfig(name) }

// ValidateTopicName returns an error wrapping ErrInvalidTopic unless name
// is a legal Kafka topic name.
func ValidateTopicName(name string) error { return topicconfig.ValidateTopicName(name) }

// IsInternalTopic reports whether a topic is one of the broker's own (listed
// with IsInternal in Metadata; it cannot be deleted, and clients cannot
// produce to it).
func IsInternalTopic(name string) bool { return topicconfig.IsInternalTopic(name) }
