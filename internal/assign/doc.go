// Package assign owns Strand's consumer-group partition assignors: the pure
// functions that decide which member of a group consumes which partition
// (DESIGN.md, invariant 6). Re-running an assignor with a different
// membership is a rebalance; Moves reports what it cost.
//
// Four assignors exist, under the protocol names Kafka clients advertise in
// JoinGroup, so a group coordinator can run whichever one its members agree on:
//
//	range               Kafka's RangeAssignor: per topic, contiguous ranges
//	roundrobin          Kafka's RoundRobinAssignor: all partitions dealt in turn
//	sticky              balanced, keeping as many previously owned partitions as possible
//	cooperative-sticky  sticky's target reached in two rounds (KIP-429): a partition
//	                    that changes owner is first revoked, then assigned
//
// Two more are the server-side assignors of KIP-848 consumer groups, which the
// broker runs over each member's subscription and current target (Subscriber,
// TopicMetadata; see ServerAssignor in server.go): uniform (Sticky's algorithm,
// Kafka's UniformAssignor) and a sticky, co-partitioning range (Kafka's
// server-side RangeAssignor). They keep the invariants below.
//
// # Invariants
//
// Every assignor here is a pure function of its inputs:
//
//   - No I/O, no goroutines, no clocks, no randomness, no package state.
//     Every function is safe for concurrent use.
//   - Deterministic: the same members (in any order, with their Topics and
//     Owned in any order, with duplicates) and the same partition counts give
//     the same Assignment. Map iteration order never leaks into a result:
//     members are put into one canonical order first (compareMembers) and
//     partitions into topic-then-partition order.
//   - Complete and valid: every partition of every topic that at least one
//     member subscribes to (and that exists in the partition counts) is
//     assigned to exactly one member, and only to a member subscribed to its
//     topic. The one deliberate exception is cooperative-sticky, which leaves a
//     partition that must change owner unassigned for one round (see
//     CooperativeSticky).
//   - Every member appears in the Assignment, with an empty list if it gets
//     nothing; each list is sorted by topic, then partition.
//
// Member IDs must be unique; a duplicate is a broken invariant of the caller
// (the coordinator issues member IDs) and panics.
//
// # Balance
//
// Roundrobin, sticky and cooperative-sticky (after its follow-up round) are
// balanced within one partition when all members subscribe to the same topics.
// Range is balanced within one per topic only; across several topics it piles
// the remainders onto the first members, exactly as Kafka does (2 members,
// 2 topics × 3 partitions: 4 and 2).
//
// With different subscriptions, range and roundrobin promise nothing beyond
// Kafka's behaviour. Sticky promises local balance: no partition can be handed
// to another member subscribed to its topic that holds at least two partitions
// fewer than its current owner. With identical subscriptions local balance is
// balance within one; with different subscriptions it is not always the most
// even assignment possible (that can need chains of moves across topics, which
// we rejected: each link moves a partition to gain little balance).
//
// # Stickiness
//
// Sticky reads each member's Owned list as the previous assignment. A partition
// claimed by several members stays with the claimant of the highest
// Generation, as Kafka resolves it; claimants tied at the highest generation
// both lose it and it is assigned afresh (Kafka logs this case as an error and
// does the same). With identical subscriptions the number of partitions that
// change owner is the minimum any balanced-within-one assignment can achieve:
// the partitions of departed members, plus, for each remaining member, what it
// holds beyond its share when the larger shares go to the members holding the
// most.
package assign
