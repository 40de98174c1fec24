// Package consumer owns the KIP-848 consumer-group engine: the pure state
// machine of a "consumer"-type group, in which the broker, not a client
// leader, decides who consumes what, and members converge on it
// incrementally without a stop-the-world rebalance.
//
// It owns: the group epoch, the target assignment and its epoch, and each
// member's epoch, state and partitions; ConsumerGroupHeartbeat handling
// (Engine.Heartbeat) with Kafka's validation and error codes in Kafka's order;
// incremental reconciliation (revoke before assign); joins (epoch 0), leaves
// (−1) and static members' temporary leaves (−2); the session and rebalance
// timeouts as an explicit step (Engine.Expire); and the records the group
// writes to __consumer_offsets (Record, Encode, Decode) with Replay.
//
// # Model
//
//	group epoch       bumped when an input of the assignment changes: a member
//	                  joins, leaves or is fenced, a subscription or the chosen
//	                  assignor changes, a subscribed topic vanishes or grows
//	                  (seen at the next heartbeat), or a topic appears that a
//	                  name or regex matches (seen at the metadata refresh)
//	assignment epoch  the group epoch the target was computed for, by a
//	                  server-side assignor of internal/assign (uniform, range)
//	member epoch      the assignment epoch the member has caught up to
//
// A member reconciles in steps (see reconcile): what it holds but its target
// does not is revoked first — it is told the reduced assignment at its old
// epoch, and its rebalance timeout starts — and a partition of its target is
// given to it only once no other member holds it, assigned or pending
// revocation. So a partition is never owned by two members, and members whose
// partitions do not change keep consuming throughout.
//
// # Invariants
//
//   - At most one owner per partition, owned meaning Assigned ∪ Revoking
//     (Group.Owners panics otherwise).
//   - member epoch ≤ assignment epoch ≤ group epoch, and none decreases
//     (a member that rejoins restarts at 0; StaticLeaveEpoch is a marker).
//   - Pure and deterministic: no I/O, clocks, goroutines or randomness; time
//     comes in as an argument. Engine.Heartbeat and Engine.Expire never
//     modify the Group they are given and return a new one, so the caller may
//     keep the old one until the records are persisted. An Engine is safe for
//     concurrent use; a Group is a value the caller serialises access to.
//   - Replaying the records the steps returned, in order, rebuilds the group
//     (without deadlines, which are not persisted).
//
// # Wiring
//
// internal/group hosts the engine in its group actor (kip848.go): it calls
// Heartbeat and Expire (at Group.NextDeadline), persists the Records in
// __consumer_offsets before a step's state is visible, replays them on load
// (Replay, then Engine.Restore), and checks OffsetCommit/OffsetFetch member
// epochs. internal/kafka translates ConsumerGroupHeartbeat (68) and
// ConsumerGroupDescribe (69), topic ids included. Not yet done: regex
// re-resolution triggered by topic changes (only the metadata refresh
// interval notices them). Classic-protocol members of a consumer group (online
// migration) are in classic.go. The record
// schemas are Strand's own (Kafka's key types 3–8, topics by name), not
// Kafka's byte layout.
package consumer
