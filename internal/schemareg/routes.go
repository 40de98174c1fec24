package schemareg

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
)

type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaJSON is an entry as the version and lookup routes return it.
type schemaJSON struct {
	Subject    string      `json:"subject,omitempty"`
	Version    int         `json:"version,omitempty"`
	ID         int         `json:"id,omitempty"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
}

func entryJSON(e *Entry) schemaJSON {
	return schemaJSON{Subject: e.Subject, Version: e.Version, ID: e.ID, SchemaType: typeField(e.SchemaType),
		References: e.References, Schema: e.Schema}
}

// typeField omits AVRO, as Confluent does.
func typeField(t string) string {
	if t == string(Avro) {
		return ""
	}
	return t
}

func (h *Handler) idEntry(r *http.Request) (*Entry, error) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		return nil, schemaNotFound()
	}
	var e *Entry
	h.store.View(func(st *State) { e = st.byID(id) })
	if e == nil {
		return nil, schemaNotFound()
	}
	return e, nil
}

func (h *Handler) getSchemaByID(r *http.Request) (any, error) {
	e, err := h.idEntry(r)
	if err != nil {
		return nil, err
	}
	return schemaJSON{SchemaType: typeField(e.SchemaType), References: e.References, Schema: e.Schema}, nil
}

func (h *Handler) getRawSchemaByID(r *http.Request) (any, error) {
	e, err := h.idEntry(r)
	if err != nil {
		return nil, err
	}
	return rawSchema(e), nil
}

// rawSchema is the schema itself as the body; Protobuf text as a JSON string.
func rawSchema(e *Entry) any {
	if json.Valid([]byte(e.Schema)) {
		return json.RawMessage(e.Schema)
	}
	return e.Schema
}

func (h *Handler) getIDVersions(r *http.Request) (any, error) {
	e, err := h.idEntry(r)
	if err != nil {
		return nil, err
	}
	out := []subjectVersion{}
	deleted := boolQuery(r, "deleted")
	h.store.View(func(st *State) {
		for _, vs := range st.subjects {
			for _, x := range vs {
				if x.ID == e.ID && (deleted || !x.Deleted) {
					out = append(out, subjectVersion{x.Subject, x.Version})
				}
			}
		}
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

func (h *Handler) listSubjects(r *http.Request) (any, error) {
	deleted := boolQuery(r, "deleted")
	out := []string{}
	h.store.View(func(st *State) {
		for s := range st.subjects {
			if len(st.versions(s, deleted)) > 0 {
				out = append(out, s)
			}
		}
	})
	sort.Strings(out)
	return out, nil
}

func (h *Handler) listVersions(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	out := []int{}
	h.store.View(func(st *State) {
		for _, e := range st.versions(subject, boolQuery(r, "deleted")) {
			out = append(out, e.Version)
		}
	})
	if len(out) == 0 {
		return nil, subjectNotFound(subject)
	}
	return out, nil
}

func (h *Handler) versionEntry(r *http.Request) (*Entry, error) {
	v, err := parseVersion(r.PathValue("version"))
	if err != nil {
		return nil, err
	}
	var e *Entry
	h.store.View(func(st *State) { e, err = findVersion(st, r.PathValue("subject"), v, boolQuery(r, "deleted")) })
	return e, err
}

func (h *Handler) getVersion(r *http.Request) (any, error) {
	e, err := h.versionEntry(r)
	if err != nil {
		return nil, err
	}
	return entryJSON(e), nil
}

func (h *Handler) getRawVersion(r *http.Request) (any, error) {
	e, err := h.versionEntry(r)
	if err != nil {
		return nil, err
	}
	return rawSchema(e), nil
}

// registerRequest is the body of register, lookup and compatibility.
type registerRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []Reference `json:"references"`
	ID         int         `json:"id"`
	Version    int         `json:"version"`
}

// resolve checks req's type and looks its references up (recursively).
func resolve(st *State, req registerRequest) (resolved, error) {
	typ, err := parseSchemaType(req.SchemaType)
	if err != nil {
		return resolved{}, errf(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: %v", err)
	}
	out := resolved{typ: typ, text: req.Schema}
	seen := map[string]bool{}
	var walk func(refs []Reference, depth int) error
	walk = func(refs []Reference, depth int) error {
		if depth > 32 {
			return errf(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: references nest too deep")
		}
		for _, ref := range refs {
			e, err := findVersion(st, ref.Subject, ref.Version, false)
			if err != nil {
				return errf(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: reference %s (%s/%d): %v", ref.Name, ref.Subject, ref.Version, err)
			}
			if err := walk(e.References, depth+1); err != nil {
				return err
			}
			if !seen[ref.Name] {
				seen[ref.Name] = true
				out.refs = append(out.refs, namedText{ref.Name, e.Schema})
			}
		}
		return nil
	}
	return out, walk(req.References, 0)
}

func compile(st *State, req registerRequest) (*parsed, error) {
	res, err := resolve(st, req)
	if err != nil {
		return nil, err
	}
	p, err := parse(res)
	if err != nil {
		return nil, errf(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema %s: %v", res.typ, err)
	}
	return p, nil
}

func entryRequest(e *Entry) registerRequest {
	return registerRequest{Schema: e.Schema, SchemaType: e.SchemaType, References: e.References}
}

func sameSchema(e *Entry, req registerRequest, typ SchemaType) bool {
	if SchemaType(e.SchemaType) != typ || canonical(typ, e.Schema) != canonical(typ, req.Schema) || len(e.References) != len(req.References) {
		return false
	}
	for i := range e.References {
		if e.References[i] != req.References[i] {
			return false
		}
	}
	return true
}

func itoa(i int) string { return strconv.Itoa(i) }

func (h *Handler) getIDSubjects(r *http.Request) (any, error) {
	v, err := h.getIDVersions(r)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, sv := range v.([]subjectVersion) {
		if len(out) == 0 || out[len(out)-1] != sv.Subject {
			out = append(out, sv.Subject)
		}
	}
	return out, nil
}

// referencedBy lists the ids of live schemas whose references name the version.
func (h *Handler) referencedBy(r *http.Request) (any, error) {
	e, err := h.versionEntry(r)
	if err != nil {
		return nil, err
	}
	ids := []int{}
	h.store.View(func(st *State) {
		for _, vs := range st.subjects {
			for _, x := range vs {
				for _, ref := range x.References {
					if !x.Deleted && ref.Subject == e.Subject && ref.Version == e.Version {
						ids = append(ids, x.ID)
					}
				}
			}
		}
	})
	sort.Ints(ids)
	return ids, nil
}
