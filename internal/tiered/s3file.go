package tiered

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7/pkg/s3utils"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// FilePutter is a Store that can upload a whole file without reading it
// into the process. A segment is uploaded through it when the store has
// it and uploads are not paced.
type FilePutter interface {
	// PutFile stores the size bytes of f from its start under key.
	PutFile(ctx context.Context, key string, f *os.File, size int64) error
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcBuffers hold the reads of fileCRC32C: a segment is checksummed a
// megabyte at a time, not read whole.
var crcBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// fileCRC32C is the CRC-32C of f's first size bytes, in the form S3's
// x-amz-checksum-crc32c header carries: the big-endian bytes in base64.
// fromBatches lets a mapped segment's sum come from its batches' CRCs.
func fileCRC32C(f *os.File, size int64, fromBatches bool) (string, error) {
	sum, err := mappedCRC32C(f, size, fromBatches)
	if errors.Is(err, errNoMapping) {
		sum, err = readCRC32C(f, size)
	}
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum)), nil
}

// errNoMapping says a file could not be mapped; it is read instead.
var errNoMapping = errors.New("tiered: no memory mapping")

// readCRC32C checksums f through reads into a pooled buffer.
func readCRC32C(f *os.File, size int64) (uint32, error) {
	bp := crcBuffers.Get().(*[]byte)
	defer crcBuffers.Put(bp)
	var sum uint32
	for off := int64(0); off < size; {
		b := (*bp)[:min(int64(len(*bp)), size-off)]
		n, err := f.ReadAt(b, off)
		if n < len(b) {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("%d bytes at %d, want %d", n, off, len(b))
			}
			return 0, err
		}
		sum = crc32.Update(sum, castagnoli, b)
		off += int64(n)
	}
	return sum, nil
}

// PutFile implements FilePutter. The request carries the file itself as
// its body, so net/http hands it to the socket with sendfile(2) over
// plain http: the segment's bytes go from the page cache to the
// connection without a copy through the process, and without the SigV4
// streaming signature, whose SHA-256 of every chunk was most of an
// upload's CPU. The body is signed as UNSIGNED-PAYLOAD (as minio-go
// itself signs every body over https) and protected instead by its
// CRC-32C in x-amz-checksum-crc32c, which S3, MinIO and SeaweedFS check
// against what arrived, refusing the object (BadDigest) if it differs —
// the same guard against corruption on the way, at a twentieth of the
// cost. A store that ignores the header stores the object all the same.
//
// The CRC-32C of a segment comes from its batches' own CRCs, without
// reading their records. If the store refuses the request (BadDigest,
// or another 400), the bytes are hashed: a different sum means a batch on disk no longer matches its
// CRC (said in the log; the bytes are uploaded as they are, and a
// consumer's CRC check finds the batch), the same sum means the body
// was damaged on the way, and the upload fails to be retried.
func (s *S3) PutFile(ctx context.Context, key string, f *os.File, size int64) error {
	sum, err := fileCRC32C(f, size, true)
	if err != nil {
		return fmt.Errorf("tiered: put %s: checksum: %w", key, err)
	}
	err = s.putFile(ctx, key, f, size, sum)
	var r *refusal // S3 says BadDigest; any 400 is checked, as stores name it differently
	if !errors.As(err, &r) || r.Status != http.StatusBadRequest {
		return err
	}
	bytesSum, cerr := fileCRC32C(f, size, false)
	if cerr != nil || bytesSum == sum {
		return err
	}
	s.logger.Warn("tiered: a segment's bytes differ from its batches' CRCs; uploading them as they are",
		"file", f.Name(), "key", key)
	return s.putFile(ctx, key, f, size, bytesSum)
}

// putFile sends f's size bytes under key with sum as their CRC-32C.
func (s *S3) putFile(ctx context.Context, key string, f *os.File, size int64, sum string) error {
	region := s.region
	if region == "" {
		var err error
		if region, err = s.client.GetBucketLocation(ctx, s.bucket); err != nil {
			return fmt.Errorf("tiered: put %s: bucket region: %w", key, err)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("tiered: put %s: %w", key, err)
	}
	u := *s.endpoint
	u.Path = "/" + s.bucket + "/" + key
	u.RawPath = "/" + s.bucket + "/" + s3utils.EncodePath(key)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), nil)
	if err != nil {
		return fmt.Errorf("tiered: put %s: %w", key, err)
	}
	req.Body = fileBody{f}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Amz-Checksum-Crc32c", sum)
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	if s.accessKey != "" || s.secretKey != "" {
		req = signer.SignV4(*req, s.accessKey, s.secretKey, "", region)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("tiered: put %s: %w", key, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("tiered: put %s: %w", key, refusalOf(resp))
	}
	_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
	return nil
}

// fileBody is a segment file as a request body: net/http closes a body
// when the request ends, but the file is the uploader's to close. It
// stays an *os.File underneath (fs.File and syscall.Conn), which is what
// lets the transport send it with sendfile.
type fileBody struct{ *os.File }

func (fileBody) Close() error { return nil }

// refusal is a store's refusal of a request: its S3 error code and
// message when the body is S3's XML error, else only the HTTP status.
type refusal struct {
	Code, Message string
	Status        int
	status        string
}

func (r *refusal) Error() string {
	if r.Code == "" {
		return r.status
	}
	return fmt.Sprintf("%s: %s (HTTP %d)", r.Code, r.Message, r.Status)
}

func refusalOf(resp *http.Response) *refusal {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var e struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	r := &refusal{Status: resp.StatusCode, status: resp.Status}
	if xml.Unmarshal(b, &e) == nil && e.Code != "" {
		r.Code, r.Message = e.Code, strings.TrimSpace(e.Message)
	}
	return r
}
