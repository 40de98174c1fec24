package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/cluster"
)

// UpdateFeatures (57) v0–v2 finalizes feature levels (KIP-584): Strand
// knows metadata.version, which versions its metadata log and inter-node
// protocol (cluster/features.go). Upgrades only: a finalized level is
// never lowered, whatever the upgrade type asks (Kafka refuses unsafe
// metadata downgrades too).
func (s *Server) handleUpdateFeatures(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	var firstErr error
	for _, u := range req.FeatureUpdates {
		err := s.updateFeature(req, u)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		r := kmsg.NewUpdateFeaturesResponseResult()
		r.Feature = u.Feature
		if err != nil {
			r.ErrorCode, r.ErrorMessage = featureErrorCode(err), kmsg.StringPtr(err.Error())
		}
		resp.Results = append(resp.Results, r)
	}
	// v2 has no per-feature results: its answer is the first failure.
	if req.Version >= 2 && firstErr != nil {
		resp.ErrorCode, resp.ErrorMessage = featureErrorCode(firstErr), kmsg.StringPtr(firstErr.Error())
	}
	return resp, nil
}

func (s *Server) updateFeature(req *kmsg.UpdateFeaturesRequest, u kmsg.UpdateFeaturesRequestFeatureUpdate) error {
	downgrade := u.AllowDowngrade || (req.Version >= 1 && u.UpgradeType >= 2)
	if u.MaxVersionLevel < 1 {
		return fmt.Errorf("%w: deleting finalized feature %s is not supported", cluster.ErrFeatureDowngrade, u.Feature)
	}
	_, finalized, _ := s.b.Features()
	if cur, ok := finalized[u.Feature]; ok && downgrade && u.MaxVersionLevel < cur {
		return fmt.Errorf("%w: %s is finalized at %d; Strand never lowers a finalized level", cluster.ErrFeatureDowngrade, u.Feature, cur)
	}
	validateOnly := req.Version >= 1 && req.ValidateOnly
	return s.b.FinalizeFeature(u.Feature, u.MaxVersionLevel, validateOnly)
}

func featureErrorCode(err error) int16 {
	switch {
	case errors.Is(err, cluster.ErrInvalidFeature), errors.Is(err, cluster.ErrFeatureDowngrade):
		return kerr.InvalidUpdateVersion.Code
	case errors.Is(err, cluster.ErrNotController), errors.Is(err, cluster.ErrNoLeader):
		return kerr.NotController.Code
	}
	return errorCode(err)
}
