package broker

// Done is closed when Close begins: a helper that runs beside the broker
// (the web console's lag sampler) stops on it rather than needing a Close
// of its own.
func (b *Broker) Done() <-chan struct{} { return b.stop }
