package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCodesAreKafkas pins every Code to Kafka's error code (kerr is used by
// this test only; the package itself never imports it).
func TestCodesAreKafkas(t *testing.T) {
	t.Parallel()
	want := map[Code]*kerr.Error{
		CodeUnknownTopicOrPartition:   kerr.UnknownTopicOrPartition,
		CodeOffsetMetadataTooLarge:    kerr.OffsetMetadataTooLarge,
		CodeCoordinatorLoadInProgress: kerr.CoordinatorLoadInProgress,
		CodeCoordinatorNotAvailable:   kerr.CoordinatorNotAvailable,
		CodeNotCoordinator:            kerr.NotCoordinator,
		CodeIllegalGeneration:         kerr.IllegalGeneration,
		CodeInconsistentGroupProtocol: kerr.InconsistentGroupProtocol,
		CodeInvalidGroupID:            kerr.InvalidGroupID,
		CodeUnknownMemberID:           kerr.UnknownMemberID,
		CodeInvalidSessionTimeout:     kerr.InvalidSessionTimeout,
		CodeRebalanceInProgress:       kerr.RebalanceInProgress,
		CodeNonEmptyGroup:             kerr.NonEmptyGroup,
		CodeGroupIDNotFound:           kerr.GroupIDNotFound,
		CodeMemberIDRequired:          kerr.MemberIDRequired,
		CodeFencedInstanceID:          kerr.FencedInstanceID,
		CodeGroupSubscribedToTopic:    kerr.GroupSubscribedToTopic,
		CodeUnsupportedVersion:        kerr.UnsupportedVersion,
		CodeStaleMemberEpoch:          kerr.StaleMemberEpoch,
	}
	if len(want)+1 != len(codeNames) {
		t.Errorf("%d codes named, %d checked", len(codeNames), len(want)+1)
	}
	for c, e := range want {
		if int16(c) != e.Code || c.String() != e.Message {
			t.Errorf("%v (%d): Kafka has %s (%d)", c, int16(c), e.Message, e.Code)
		}
	}
	if CodeNone != 0 || CodeNone.String() != "NONE" || Code(999).String() != "CODE(999)" {
		t.Errorf("CodeNone or unknown code names")
	}
}
