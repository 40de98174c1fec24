package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
)

// The ACL APIs: DescribeAcls (29), CreateAcls (30), DeleteAcls (31), v0-v3.
//
// Behavior:
//   - Cluster:Describe (29) and Cluster:Alter (30, 31) are asked by the
//     authorization gate (authz.go) like any other rule.
//   - Without an authorizer every answer is SECURITY_DISABLED, as Kafka.
//   - The ACL set lives in the cluster metadata (meta.json on a single
//     node, the raft image in a cluster): a change is read, computed and
//     put with a compare-and-set on the set's version, retried when another
//     change won, and answered once durable. Every node loads the set of
//     each new image into its authorizer (watchACLs), so an ACL created on
//     one node is enforced on all.
//   - CreateAcls validates each creation (concrete resource type, Literal
//     or Prefixed pattern, "kafka-cluster" for the cluster, concrete
//     operation and permission, Type:name principal, a host): an invalid one
//     answers INVALID_REQUEST alone; the valid ones of a request are stored
//     together. Creating an ACL that exists is a no-op.
//   - DescribeAcls and DeleteAcls take filters (resource type Any, name
//     null = any, pattern type Any/Match/Literal/Prefixed, principal and
//     host null = any, operation and permission Any); an invalid filter
//     answers INVALID_REQUEST. Describe groups matches by resource pattern.
//   - v0 has no pattern type: creations are Literal and filters Literal, as
//     kmsg's defaults carry them.

// maxACLRetries bounds the compare-and-set retries of one ACL change.
const maxACLRetries = 20

var errSecurityDisabled = errors.New("no authorizer is configured on the broker")

// watchACLs keeps the authorizer's ACLs equal to the metadata's: it
// subscribes to new images, then loads the current set.
func (s *Server) watchACLs() error {
	s.aclCancel = s.b.WatchACLs(func(data []byte, version int64) {
		if err := s.loadACLs(data, version); err != nil {
			s.logger.Error("kafka: ACLs in the metadata do not decode; keeping the previous ones", "err", err)
		}
	})
	return s.loadACLs(s.b.ACLs())
}

// loadACLs installs data as the authorizer's ACLs unless a version at
// least as new is already loaded.
func (s *Server) loadACLs(data []byte, version int64) error {
	s.aclMu.Lock()
	defer s.aclMu.Unlock()
	if s.aclLoaded && version <= s.aclVersion {
		return nil
	}
	set := &acl.Set{}
	if data != nil {
		var err error
		if set, err = acl.Decode(data); err != nil {
			return err
		}
	}
	s.cfg.Authorizer.Replace(set)
	s.aclLoaded, s.aclVersion = true, version
	return nil
}

// updateACLs applies change to the current ACLs and stores the result,
// retrying when another change committed in between.
func (s *Server) updateACLs(change func(cur *acl.Set) (*acl.Set, error)) error {
	for range maxACLRetries {
		data, version := s.b.ACLs()
		cur := &acl.Set{}
		if data != nil {
			var err error
			if cur, err = acl.Decode(data); err != nil {
				return err
			}
		}
		next, err := change(cur)
		if err != nil || next == cur {
			return err
		}
		enc := next.Encode(nil)
		err = s.b.PutACLs(enc, version)
		if errors.Is(err, broker.ErrACLConflict) {
			continue
		}
		if err != nil {
			return err
		}
		return s.loadACLs(enc, version+1) // read your own write before the answer
	}
	return fmt.Errorf("kafka: ACL change lost %d races in a row", maxACLRetries)
}

func (s *Server) handleCreateACLs(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	var valid []acl.Binding
	var validIdx []int
	for i, c := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		if s.cfg.Authorizer == nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.SecurityDisabled.Code, errMessage(errSecurityDisabled)
			continue
		}
		b := acl.Binding{
			Pattern: acl.Pattern{Type: acl.ResourceType(c.ResourceType), Name: c.ResourceName, PatternType: acl.PatternType(c.ResourcePatternType)},
			Entry:   acl.Entry{Principal: acl.Principal(c.Principal), Host: c.Host, Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType)},
		}
		if err := b.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		valid, validIdx = append(valid, b), append(validIdx, i)
	}
	if len(valid) == 0 {
		return resp, nil
	}
	err := s.updateACLs(func(cur *acl.Set) (*acl.Set, error) { return cur.With(valid...) })
	if err != nil {
		s.logUnknown("create ACLs", err)
		for _, i := range validIdx {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errorCode(err), errMessage(err)
		}
		return resp, nil
	}
	for _, b := range valid {
		s.logger.Info("kafka: ACL created", "acl", b.String())
	}
	return resp, nil
}

// bindingFilter reads a DescribeAcls or DeleteAcls filter.
func bindingFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.BindingFilter {
	f := acl.BindingFilter{
		Pattern: acl.PatternFilter{Type: acl.ResourceType(rt), Name: name, PatternType: acl.PatternType(pt)},
		Entry:   acl.EntryFilter{Host: host, Operation: acl.Operation(op), Permission: acl.Permission(perm)},
	}
	if principal != nil {
		p := acl.Principal(*principal)
		f.Entry.Principal = &p
	}
	return f
}

func (s *Server) handleDescribeACLs(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if s.cfg.Authorizer == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, errMessage(errSecurityDisabled)
		return resp, nil
	}
	f := bindingFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return resp, nil
	}
	// Match answers in canonical order (type, pattern type, name, …), so
	// the ACLs of one resource pattern are adjacent.
	for _, b := range s.cfg.Authorizer.Set().Match(f) {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(b.Pattern.Type) ||
			resp.Resources[n-1].ResourceName != b.Pattern.Name || resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(b.Pattern.PatternType) {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceType(b.Pattern.Type), b.Pattern.Name, kmsg.ACLResourcePatternType(b.Pattern.PatternType)
			resp.Resources = append(resp.Resources, r)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = string(b.Entry.Principal), b.Entry.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	return resp, nil
}

func (s *Server) handleDeleteACLs(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	filters := make([]acl.BindingFilter, len(req.Filters))
	for i, rf := range req.Filters {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
		filters[i] = bindingFilter(rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		if s.cfg.Authorizer == nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.SecurityDisabled.Code, errMessage(errSecurityDisabled)
		}
	}
	if s.cfg.Authorizer == nil || len(filters) == 0 {
		return resp, nil
	}
	var removed [][]acl.Binding
	var errs []error
	err := s.updateACLs(func(cur *acl.Set) (*acl.Set, error) {
		var next *acl.Set
		next, removed, errs = cur.Without(filters...)
		return next, nil
	})
	for i := range filters {
		r := &resp.Results[i]
		switch {
		case errs != nil && errs[i] != nil:
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(errs[i].Error())
			continue
		case err != nil:
			s.logUnknown("delete ACLs", err)
			r.ErrorCode, r.ErrorMessage = errorCode(err), errMessage(err)
			continue
		}
		for _, b := range removed[i] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(b.Pattern.Type), b.Pattern.Name, kmsg.ACLResourcePatternType(b.Pattern.PatternType)
			m.Principal, m.Host = string(b.Entry.Principal), b.Entry.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
			r.MatchingACLs = append(r.MatchingACLs, m)
			s.logger.Info("kafka: ACL deleted", "acl", b.String())
		}
	}
	return resp, nil
}
