package kafka

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-v5.
//
// Behavior:
//   - Advertises exactly the apis table (dispatch.go): every key served and
//     the version range its handler honours.
//   - A request at a version above v5 is answered in the v0 format with
//     UNSUPPORTED_VERSION and the supported keys (Kafka ≥ 2.4), so the client
//     can retry with a version both sides know; its body is not decoded.
//   - v3+: ClientSoftwareName and ClientSoftwareVersion must match Kafka's
//     pattern, else INVALID_REQUEST.
//   - v5 (KIP-1242): ClusterID and NodeID must be set together (else
//     INVALID_REQUEST); if set and either differs from this node's,
//     REBOOTSTRAP_REQUIRED.
//   - v3+: the features table below, each as a supported feature (0 up to
//     its level) and a finalized one (at its level), with finalized epoch
//     1: the levels are fixed by the code, not changed by UpdateFeatures.
//     Clients take the paths a feature gates only when it is finalized,
//     so a feature is listed only once what it gates works.

// feature is one finalized feature at the level Strand implements.
type feature struct {
	name  string
	level int16
}

// features are the finalized features ApiVersions v3+ reports, one line
// each, sorted by name.
var features = []feature{
	{"group.version", 1},       // KIP-848 consumer groups: ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69)
	{"share.version", 1},       // KIP-932 share groups: ShareGroupHeartbeat (76), ShareGroupDescribe (77), ShareFetch (78), ShareAcknowledge (79)
	{"transaction.version", 2}, // KIP-890: implicit adds on Produce v12 and TxnOffsetCommit v5, an epoch bump per EndTxn v5
}

var softwareNameRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (s *Server) handleApiVersions(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = s.advertisedKeys()
	if req.Version >= 3 {
		for _, f := range features {
			if f.name == "share.version" && s.b.Share() == nil {
				continue // a cluster member serves no share groups yet
			}
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = f.name, 0, f.level
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.level, f.level
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
		// metadata.version comes from the cluster: it changes with
		// UpdateFeatures, and each build supports its own range.
		supported, finalized, epoch := s.b.Features()
		for name, r := range supported {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = name, r.Min, r.Max
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, finalized[name], finalized[name]
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
		slices.SortFunc(resp.SupportedFeatures, func(a, b kmsg.ApiVersionsResponseSupportedFeature) int { return strings.Compare(a.Name, b.Name) })
		slices.SortFunc(resp.FinalizedFeatures, func(a, b kmsg.ApiVersionsResponseFinalizedFeature) int { return strings.Compare(a.Name, b.Name) })
		resp.FinalizedFeaturesEpoch = epoch
	}
	if req.Version >= 3 && (!softwareNameRE.MatchString(req.ClientSoftwareName) || !softwareNameRE.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.Version >= 5 {
		switch {
		case (req.ClusterID == nil) != (req.NodeID < 0):
			resp.ErrorCode = kerr.InvalidRequest.Code
		case req.ClusterID != nil && (*req.ClusterID != s.b.ClusterID() || req.NodeID != int32(s.b.NodeID())):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
		}
	}
	return resp, nil
}

// apiVersionsUnsupported answers an ApiVersions request at an unknown
// version: v0 format, UNSUPPORTED_VERSION, plus the supported keys.
func (s *Server) apiVersionsUnsupported() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = s.advertisedKeys()
	return resp
}

func (s *Server) advertisedKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for key, a := range apis {
		if !s.serves(key) {
			continue // not on this listener
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, a.min, a.max
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return keys
}
