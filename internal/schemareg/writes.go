package schemareg

import (
	"net/http"
	"strings"
)

func strp(s string) *string { return &s }

func (h *Handler) writable(st *State, subject string) error {
	if st.modeOf(subject) == modeReadOnly {
		return notPermitted("Subject %s is in read-only mode", subject)
	}
	return nil
}

func (h *Handler) register(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	var req registerRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	defer h.lockWrites()()
	var rec *SchemaValue
	var id int
	var err error
	h.viewLocked(func(st *State) { rec, id, err = planRegister(st, subject, req) })
	if err != nil {
		return nil, err
	}
	if rec != nil {
		err := h.writeLocked(r.Context(), Record{Key: Key{KeyType: KeySchema, Subject: strp(subject), Version: rec.Version, Magic: 1}, Schema: rec})
		if err != nil {
			return nil, err
		}
	}
	return map[string]int{"id": id}, nil
}

// planRegister decides what registering req under subject writes (nil when
// it is already there) and the id it answers.
func planRegister(st *State, subject string, req registerRequest) (*SchemaValue, int, error) {
	mode := st.modeOf(subject)
	if mode == modeReadOnly {
		return nil, 0, notPermitted("Subject %s is in read-only mode", subject)
	}
	if mode != modeImport && (req.ID > 0 || req.Version > 0) {
		return nil, 0, notPermitted("Subject %s is not in import mode", subject)
	}
	cand, err := compile(st, req)
	if err != nil {
		return nil, 0, err
	}
	typ, _ := parseSchemaType(req.SchemaType)
	live := st.versions(subject, false)
	for _, e := range live {
		if sameSchema(e, req, typ) && (req.ID <= 0 || req.ID == e.ID) {
			return nil, e.ID, nil
		}
	}
	id := req.ID
	if id > 0 {
		if e := st.byID(id); e != nil && !sameSchema(e, req, typ) {
			return nil, 0, notPermitted("Overwrite new schema with id %d is not permitted.", id)
		}
	} else {
		for _, vs := range st.subjects {
			for _, e := range vs {
				if sameSchema(e, req, typ) {
					id = e.ID
				}
			}
		}
		if id == 0 {
			id = st.maxID + 1
		}
	}
	version := req.Version
	if version > 0 {
		if _, taken := st.subjects[subject][version]; taken {
			return nil, 0, notPermitted("Version %d already exists for subject %s", version, subject)
		}
	} else {
		for v := range st.subjects[subject] {
			version = max(version, v)
		}
		version++
	}
	if mode != modeImport {
		var old []*parsed
		for _, e := range live {
			if SchemaType(e.SchemaType) != typ {
				continue
			}
			p, err := compile(st, entryRequest(e))
			if err == nil {
				old = append(old, p)
			}
		}
		if msgs := checkCompatible(st.level(subject), cand, old); len(msgs) > 0 {
			return nil, 0, errf(http.StatusConflict, CodeIncompatible,
				"Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [%s]", subject, strings.Join(msgs, "; "))
		}
	}
	return &SchemaValue{Subject: subject, Version: version, ID: id, Schema: req.Schema,
		SchemaType: string(typ), References: req.References}, id, nil
}

func (h *Handler) lookup(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	var req registerRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	var out any
	var err error
	h.store.View(func(st *State) {
		all := st.versions(subject, boolQuery(r, "deleted"))
		if len(all) == 0 {
			err = subjectNotFound(subject)
			return
		}
		if _, err = compile(st, req); err != nil {
			return
		}
		typ, _ := parseSchemaType(req.SchemaType)
		for _, e := range all {
			if sameSchema(e, req, typ) {
				out = entryJSON(e)
				return
			}
		}
		err = schemaNotFound()
	})
	return out, err
}

// referenced reports whether a live schema outside subject refers to subject
// (at version, or any version when version is 0).
func referenced(st *State, subject string, version int) bool {
	for _, vs := range st.subjects {
		for _, e := range vs {
			if e.Deleted {
				continue
			}
			for _, ref := range e.References {
				if ref.Subject == subject && (version == 0 || ref.Version == version) {
					return true
				}
			}
		}
	}
	return false
}

func (h *Handler) deleteSubject(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	permanent := boolQuery(r, "permanent")
	defer h.lockWrites()()
	var recs []Record
	deleted := []int{}
	var err error
	h.viewLocked(func(st *State) {
		if err = h.writable(st, subject); err != nil {
			return
		}
		all, live := st.versions(subject, true), st.versions(subject, false)
		switch {
		case len(all) == 0:
			err = subjectNotFound(subject)
		case referenced(st, subject, 0):
			err = errf(http.StatusUnprocessableEntity, CodeReferenceExists, "One or more references exist to the schema {subject=%s}", subject)
		case !permanent && len(live) == 0:
			err = errf(http.StatusNotFound, CodeSubjectSoftDeleted, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
		case permanent && len(live) > 0:
			err = errf(http.StatusNotFound, CodeSubjectNotSoftDeleted, "Subject '%s' was not deleted first before being permanently deleted", subject)
		case permanent:
			for _, e := range all {
				deleted = append(deleted, e.Version)
				recs = append(recs, Record{Key: Key{KeyType: KeySchema, Subject: strp(subject), Version: e.Version, Magic: 1}})
			}
			if _, ok := st.config[subject]; ok {
				recs = append(recs, Record{Key: Key{KeyType: KeyConfig, Subject: strp(subject)}})
			}
		default:
			for _, e := range live {
				deleted = append(deleted, e.Version)
				v := e.SchemaValue
				v.Deleted = true
				recs = append(recs, Record{Key: Key{KeyType: KeySchema, Subject: strp(subject), Version: e.Version, Magic: 1}, Schema: &v})
			}
			recs = append(recs, Record{Key: Key{KeyType: KeyDeleteSubject, Subject: strp(subject)},
				DeleteSubject: &DeleteSubjectValue{Subject: subject, Version: live[len(live)-1].Version}})
		}
	})
	if err != nil {
		return nil, err
	}
	return deleted, h.writeAll(r, recs)
}

func (h *Handler) writeAll(r *http.Request, recs []Record) error {
	for _, rec := range recs {
		if err := h.writeLocked(r.Context(), rec); err != nil {
			return err
		}
	}
	return nil
}

func (h *Handler) deleteVersion(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	permanent := boolQuery(r, "permanent")
	v, err := parseVersion(r.PathValue("version"))
	if err != nil {
		return nil, err
	}
	defer h.lockWrites()()
	var rec Record
	var version int
	h.viewLocked(func(st *State) {
		if err = h.writable(st, subject); err != nil {
			return
		}
		var e *Entry
		if e, err = findVersion(st, subject, v, permanent); err != nil {
			if _, ferr := findVersion(st, subject, v, true); !permanent && ferr == nil && v != -1 {
				err = errf(http.StatusNotFound, CodeVersionSoftDeleted, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subject, v)
			}
			return
		}
		version = e.Version
		key := Key{KeyType: KeySchema, Subject: strp(subject), Version: e.Version, Magic: 1}
		switch {
		case referenced(st, subject, e.Version):
			err = errf(http.StatusUnprocessableEntity, CodeReferenceExists, "One or more references exist to the schema {subject=%s,version=%d}", subject, e.Version)
		case permanent && !e.Deleted:
			err = errf(http.StatusNotFound, CodeVersionNotSoftDeleted, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, e.Version)
		case permanent:
			rec = Record{Key: key}
		default:
			val := e.SchemaValue
			val.Deleted = true
			rec = Record{Key: key, Schema: &val}
		}
	})
	if err != nil {
		return nil, err
	}
	return version, h.writeLocked(r.Context(), rec)
}
