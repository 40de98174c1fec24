//go:build !linux

package kafka

import (
	"net"

	"github.com/strandmq/strand/internal/partlog"
)

const haveSendfile = false

// sendFile is not used on this platform: writeSpan copies.
func sendFile(*net.TCPConn, partlog.Span) (bool, error) { return false, nil }
