package schemareg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ContentType is the registry's media type, as Confluent's.
const ContentType = "application/vnd.schemaregistry.v1+json"

// Confluent's error codes.
const (
	CodeSubjectNotFound       = 40401
	CodeVersionNotFound       = 40402
	CodeSchemaNotFound        = 40403
	CodeSubjectSoftDeleted    = 40404
	CodeSubjectNotSoftDeleted = 40405
	CodeVersionSoftDeleted    = 40406
	CodeVersionNotSoftDeleted = 40407
	CodeSubjectConfigNotFound = 40408
	CodeSubjectModeNotFound   = 40409
	CodeIncompatible          = 409
	CodeInvalidSchema         = 42201
	CodeInvalidVersion        = 42202
	CodeInvalidCompatibility  = 42203
	CodeInvalidMode           = 42204
	CodeOperationNotPermitted = 42205
	CodeReferenceExists       = 42206
	CodeStoreError            = 50001
	defaultLevel              = "BACKWARD"
	defaultMode               = "READWRITE"
	modeImport                = "IMPORT"
	modeReadOnly              = "READONLY"
)

var modes = map[string]bool{"READWRITE": true, "READONLY": true, "IMPORT": true}

// apiError is an error body: {"error_code": 40401, "message": "..."}.
type apiError struct {
	status int
	Code   int    `json:"error_code"`
	Msg    string `json:"message"`
}

func (e *apiError) Error() string { return e.Msg }

func errf(status, code int, format string, a ...any) *apiError {
	return &apiError{status: status, Code: code, Msg: fmt.Sprintf(format, a...)}
}

// Handler serves Confluent's schema registry REST API over a Store. Writes
// are serialized by one mutex so ids and versions are assigned once; in a
// cluster the Store must also forward writes to a single writer.
type Handler struct {
	store Store
	mux   *http.ServeMux
	write sync.Mutex
	plan  struct { // guarded by write
		at int64 // where the next write must land
		ok bool  // at was read since write was locked
	}
}

// lockWrites serializes this node's writes; call the returned func to
// unlock. Other nodes' writes are ordered by _schemas offsets (Key.Seq).
func (h *Handler) lockWrites() func() {
	h.write.Lock()
	h.plan.ok = false
	return h.write.Unlock
}

// viewLocked is View for a write being decided: the state's position is
// where its records must land.
func (h *Handler) viewLocked(fn func(*State)) {
	h.store.View(func(st *State) {
		h.plan.at, h.plan.ok = st.Position(), true
		fn(st)
	})
}

// writeLocked writes rec planned for the position of the last
// viewLocked (or the current one), and moves the plan past it.
func (h *Handler) writeLocked(ctx context.Context, rec Record) error {
	if !h.plan.ok {
		h.viewLocked(func(*State) {})
	}
	seq := h.plan.at
	rec.Key.Seq = &seq
	h.plan.at++
	return h.store.Write(ctx, rec)
}

// Syncer is a Store whose state may lag writes other nodes made: Sync
// catches it up (as far as it can soon) so a write is decided on the
// newest state, and loses fewer races (ErrConflict).
type Syncer interface {
	Sync(ctx context.Context)
}

// maxConflicts bounds how often a request is decided again after losing
// races with other nodes' writes.
const maxConflicts = 32

// NewHandler returns the registry API over store.
func NewHandler(store Store) *Handler {
	h := &Handler{store: store, mux: http.NewServeMux()}
	routes := map[string]func(*http.Request) (any, error){
		"GET /schemas/ids/{id}":                                     h.getSchemaByID,
		"GET /schemas/ids/{id}/schema":                              h.getRawSchemaByID,
		"GET /schemas/ids/{id}/versions":                            h.getIDVersions,
		"GET /schemas/ids/{id}/subjects":                            h.getIDSubjects,
		"GET /subjects/{subject}/versions/{version}/referencedby":   h.referencedBy,
		"GET /schemas/types":                                        func(*http.Request) (any, error) { return []string{"JSON", "PROTOBUF", "AVRO"}, nil },
		"GET /subjects":                                             h.listSubjects,
		"GET /subjects/{subject}/versions":                          h.listVersions,
		"GET /subjects/{subject}/versions/{version}":                h.getVersion,
		"GET /subjects/{subject}/versions/{version}/schema":         h.getRawVersion,
		"POST /subjects/{subject}/versions":                         h.register,
		"POST /subjects/{subject}":                                  h.lookup,
		"DELETE /subjects/{subject}":                                h.deleteSubject,
		"DELETE /subjects/{subject}/versions/{version}":             h.deleteVersion,
		"GET /config":                                               h.getConfig,
		"PUT /config":                                               h.putConfig,
		"GET /config/{subject}":                                     h.getConfig,
		"PUT /config/{subject}":                                     h.putConfig,
		"DELETE /config":                                            h.deleteConfig,
		"DELETE /config/{subject}":                                  h.deleteConfig,
		"GET /mode":                                                 h.getMode,
		"PUT /mode":                                                 h.putMode,
		"GET /mode/{subject}":                                       h.getMode,
		"PUT /mode/{subject}":                                       h.putMode,
		"DELETE /mode/{subject}":                                    h.deleteMode,
		"POST /compatibility/subjects/{subject}/versions/{version}": h.compatibility,
		"POST /compatibility/subjects/{subject}/versions":           h.compatibility,
	}
	for pattern, fn := range routes {
		h.mux.HandleFunc(pattern, h.serve(fn))
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, errf(http.StatusNotFound, http.StatusNotFound, "HTTP 404 Not Found"), nil)
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// serve answers one route. A request whose write lost a race with another
// node's (ErrConflict) is decided again on the newer state, its body read
// once and replayed.
func (h *Handler) serve(fn func(*http.Request) (any, error)) http.HandlerFunc {
	syncer, _ := h.store.(Syncer)
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			reply(w, errf(http.StatusUnprocessableEntity, 422, "Unrecognized request body: %v", err), nil)
			return
		}
		var v any
		for i := range maxConflicts {
			if syncer != nil && r.Method != http.MethodGet {
				syncer.Sync(r.Context())
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if v, err = fn(r); !errors.Is(err, ErrConflict) {
				break
			}
			// Writers on several nodes that lost together would race
			// again in step: a short random pause spreads them out.
			select {
			case <-time.After(time.Duration(rand.Int64N(int64(i+1) * int64(5*time.Millisecond)))):
			case <-r.Context().Done():
			}
		}
		reply(w, err, v)
	}
}

// maxBody bounds a request body (a schema with its metadata).
const maxBody = 16 << 20

func reply(w http.ResponseWriter, err error, v any) {
	w.Header().Set("Content-Type", ContentType)
	status := http.StatusOK
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = errf(http.StatusInternalServerError, CodeStoreError, "Error in the backend datastore: %v", err)
		}
		status, v = ae.status, ae
	}
	w.WriteHeader(status)
	if raw, ok := v.(json.RawMessage); ok {
		_, _ = w.Write(raw)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

func decodeBody(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return errf(http.StatusUnprocessableEntity, 422, "Unrecognized request body: %v", err)
	}
	return nil
}

func boolQuery(r *http.Request, name string) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return b
}

// parseVersion reads "latest", -1 or a positive version.
func parseVersion(s string) (int, error) {
	if s == "latest" {
		return -1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v == 0 || v < -1 {
		return 0, errf(http.StatusUnprocessableEntity, CodeInvalidVersion,
			"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)
	}
	return v, nil
}

func subjectNotFound(s string) error {
	return errf(http.StatusNotFound, CodeSubjectNotFound, "Subject '%s' not found.", s)
}

func versionNotFound(v int) error {
	return errf(http.StatusNotFound, CodeVersionNotFound, "Version %d not found.", v)
}

func schemaNotFound() error {
	return errf(http.StatusNotFound, CodeSchemaNotFound, "Schema not found")
}

func notPermitted(format string, a ...any) error {
	return errf(http.StatusUnprocessableEntity, CodeOperationNotPermitted, format, a...)
}

// findVersion returns subject's version v (-1: the latest live one).
func findVersion(st *State, subject string, v int, deleted bool) (*Entry, error) {
	all := st.versions(subject, true)
	if len(all) == 0 {
		return nil, subjectNotFound(subject)
	}
	live := st.versions(subject, deleted)
	if len(live) == 0 {
		return nil, subjectNotFound(subject)
	}
	if v == -1 {
		return live[len(live)-1], nil
	}
	for _, e := range live {
		if e.Version == v {
			return e, nil
		}
	}
	return nil, versionNotFound(v)
}

// level returns subject's compatibility level, falling back to the global one.
func (st *State) level(subject string) string {
	if l, ok := st.config[subject]; ok {
		return l
	}
	if l, ok := st.config[""]; ok {
		return l
	}
	return defaultLevel
}

func (st *State) modeOf(subject string) string {
	if m, ok := st.mode[subject]; ok {
		return m
	}
	if m, ok := st.mode[""]; ok {
		return m
	}
	return defaultMode
}
