package group

import "strconv"

// Code is the result of a coordinator operation. Its numeric values equal
// Kafka's protocol error codes, so internal/kafka translates a Code to the
// wire by a plain conversion (int16(code)) without this package importing
// kerr or kmsg's request types.
type Code int16

// The codes the coordinator returns. Values are Kafka's (kerr).
const (
	CodeNone                      Code = 0
	CodeUnknownTopicOrPartition   Code = 3
	CodeOffsetMetadataTooLarge    Code = 12
	CodeCoordinatorLoadInProgress Code = 14
	CodeCoordinatorNotAvailable   Code = 15
	CodeNotCoordinator            Code = 16
	CodeIllegalGeneration         Code = 22
	CodeInconsistentGroupProtocol Code = 23
	CodeInvalidGroupID            Code = 24
	CodeUnknownMemberID           Code = 25
	CodeInvalidSessionTimeout     Code = 26
	CodeRebalanceInProgress       Code = 27
	CodeNonEmptyGroup             Code = 68
	CodeGroupIDNotFound           Code = 69
	CodeMemberIDRequired          Code = 79
	CodeFencedInstanceID          Code = 82
	CodeGroupSubscribedToTopic    Code = 86
	CodeUnsupportedVersion        Code = 35
	CodeStaleMemberEpoch          Code = 113
)

var codeNames = map[Code]string{
	CodeNone:                      "NONE",
	CodeUnknownTopicOrPartition:   "UNKNOWN_TOPIC_OR_PARTITION",
	CodeOffsetMetadataTooLarge:    "OFFSET_METADATA_TOO_LARGE",
	CodeCoordinatorLoadInProgress: "COORDINATOR_LOAD_IN_PROGRESS",
	CodeCoordinatorNotAvailable:   "COORDINATOR_NOT_AVAILABLE",
	CodeNotCoordinator:            "NOT_COORDINATOR",
	CodeIllegalGeneration:         "ILLEGAL_GENERATION",
	CodeInconsistentGroupProtocol: "INCONSISTENT_GROUP_PROTOCOL",
	CodeInvalidGroupID:            "INVALID_GROUP_ID",
	CodeUnknownMemberID:           "UNKNOWN_MEMBER_ID",
	CodeInvalidSessionTimeout:     "INVALID_SESSION_TIMEOUT",
	CodeRebalanceInProgress:       "REBALANCE_IN_PROGRESS",
	CodeNonEmptyGroup:             "NON_EMPTY_GROUP",
	CodeGroupIDNotFound:           "GROUP_ID_NOT_FOUND",
	CodeMemberIDRequired:          "MEMBER_ID_REQUIRED",
	CodeFencedInstanceID:          "FENCED_INSTANCE_ID",
	CodeGroupSubscribedToTopic:    "GROUP_SUBSCRIBED_TO_TOPIC",
	CodeUnsupportedVersion:        "UNSUPPORTED_VERSION",
	CodeStaleMemberEpoch:          "STALE_MEMBER_EPOCH",
}

// String returns Kafka's name for the code, e.g. "UNKNOWN_MEMBER_ID".
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "CODE(" + strconv.Itoa(int(c)) + ")"
}
