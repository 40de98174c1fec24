// Package acl owns Strand's access-control lists and the decision over them,
// with the semantics of Apache Kafka's StandardAuthorizer: what an ACL is
// (Binding: a resource Pattern and an Entry), whether a request may proceed
// (Authorizer.Authorize), which ACLs a DescribeAcls or DeleteAcls filter
// selects (BindingFilter), the versioned byte form the ACL set is persisted
// in (Encode, Decode), and which check each Kafka API asks (RuleFor).
//
// It is a pure leaf: no I/O, no clock, no other Strand package. Enforcement
// in the request handlers, the wire APIs DescribeAcls (29), CreateAcls (30)
// and DeleteAcls (31), persistence of the encoded set in the cluster
// metadata, and the `strand acl` CLI come next and build on this package.
//
// # Decision
//
// Authorize answers, for a principal connecting from a host, whether an
// operation on one named resource is allowed:
//
//  1. A super user (Config.SuperUsers, Kafka's super.users) is allowed
//     everything, with or without ACLs.
//  2. An ACL is about the resource when its resource type is the same and
//     its pattern is the literal name, the literal "*" (every resource of
//     the type), or a prefix of the name (Prefixed). If no ACL is about the
//     resource, Config.AllowIfNoACL (allow.everyone.if.no.acl.found, false
//     by default) decides.
//  3. Of those, an ACL applies to the request when its principal is the
//     request's or "User:*", its host is the request's or "*", and its
//     operation is the requested one or All; an Allow ACL also applies to
//     operations it implies (Describe ⇐ Read, Write, Delete, Alter;
//     DescribeConfigs ⇐ AlterConfigs). A Deny never implies: denying Read
//     does not deny Describe.
//  4. Any applicable Deny denies; otherwise any applicable Allow allows;
//     otherwise the request is denied (ACLs exist for the resource, none
//     grants this).
//
// # Index and thread-safety
//
// The ACLs of each resource type are indexed as Kafka's StandardAuthorizerData
// does in spirit, so that a check never scans unrelated ACLs: literal names in
// a map (the literal "*" is simply the key "*"), prefixes in a sorted slice. A
// check looks up the name and "*" and then walks only the prefixes of the name
// through binary searches that each step to a shorter candidate, so its cost
// is bounded by the name's length and the log of the ACL count, not by the
// number of ACLs (BenchmarkAuthorize: 10,000 ACLs).
//
// The index is immutable; the Authorizer publishes a new one through an
// atomic pointer on every change (copy-on-write). Checks are lock-free and
// safe from any goroutine; changes are serialized by a mutex. Rebuilding on
// each change costs O(n log n) for n ACLs, which suits ACLs' rate of change
// (administrative), and keeps a check free of locks on the request path.
//
// # Deliberate deviations from Kafka
//
//   - Hosts compare as strings, as in Kafka; callers pass the remote IP in
//     its canonical text form (netip.Addr.String), and an ACL's host is
//     canonicalized the same way when it parses as an IP address, so
//     "::ffff:10.0.0.1" and "10.0.0.1" are one host.
//   - Only "User:*" is the wildcard principal, as in Kafka.
package acl
