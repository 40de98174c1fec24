package kafka

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"

	"github.com/strandmq/strand/internal/partlog"
)

const haveSendfile = true

// sendFile sends sp to the socket with sendfile(2), from the span's own
// offset (the descriptor's file position, which it shares with the
// segment's writer, is neither used nor moved). done is false when the
// socket has no descriptor to use, and nothing was sent.
func sendFile(tc *net.TCPConn, sp partlog.Span) (done bool, err error) {
	dst, err := tc.SyscallConn()
	if err != nil {
		return false, nil
	}
	src, err := sp.File.SyscallConn()
	if err != nil {
		return false, nil
	}
	pos, left := sp.Pos, sp.Len
	var serr error
	cerr := src.Control(func(in uintptr) {
		werr := dst.Write(func(out uintptr) bool {
			for left > 0 {
				n, err := unix.Sendfile(int(out), int(in), &pos, min(left, 1<<30))
				if n > 0 {
					left -= n
				}
				switch {
				case errors.Is(err, unix.EAGAIN):
					return false // wait until the socket can take more
				case errors.Is(err, unix.EINTR):
				case err != nil:
					serr = err
					return true
				case n == 0:
					serr = fmt.Errorf("kafka: span of %s cut short at %d: %w", sp.File.Name(), pos, io.ErrUnexpectedEOF)
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	return true, cmp.Or(serr, cerr)
}
