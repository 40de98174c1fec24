package strand

// TierPass uploads sealed segments and applies remote retention once on
// every tiered partition (orphans: delete orphan objects too).
func (b *Broker) TierPass(orphans bool) { b.b.TierPass(orphans) }
