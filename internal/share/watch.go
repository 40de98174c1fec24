package share

// A share fetch that finds nothing to acquire waits up to its MaxWait for
// records. Where the host reports appends, the wait ends at the next
// high-watermark advance of one of the fetch's partitions, so a record is
// handed out about as soon as it is committed rather than at the next poll.

// LogWatcher is the part of Host that reports appends; a Host without it
// has waiting fetches poll.
type LogWatcher interface {
	// NotifyHighWatermark sends on c (buffered, one), without blocking,
	// the next time tp's high watermark advances.
	NotifyHighWatermark(tp TopicPartition, c chan<- struct{})
	// StopNotify forgets c.
	StopNotify(tp TopicPartition, c chan<- struct{})
}

// watchLogs registers one channel on every partition of a fetch; the
// returned func unregisters it.
func (m *Manager) watchLogs(tps []TopicPartition) (<-chan struct{}, func()) {
	w, ok := m.host.(LogWatcher)
	if !ok {
		return nil, func() {}
	}
	c := make(chan struct{}, 1)
	for _, tp := range tps {
		w.NotifyHighWatermark(tp, c)
	}
	return c, func() {
		for _, tp := range tps {
			w.StopNotify(tp, c)
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
