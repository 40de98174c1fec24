package partition

import (
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/topicconfig"
)

// ParseDirName splits a partition directory's name, <topic>-<partition>
// as Kafka names them, and reports whether name is one.
func ParseDirName(name string) (topic string, p PartitionID, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != name[i+1:] {
		return "", 0, false
	}
	if topicconfig.ValidateTopicName(name[:i]) != nil {
		return "", 0, false
	}
	return name[:i], PartitionID(n), true
}
