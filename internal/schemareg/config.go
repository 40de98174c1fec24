package schemareg

import (
	"net/http"
	"strings"
)

func (h *Handler) getConfig(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	var level string
	var err error
	h.store.View(func(st *State) {
		l, ok := st.config[subject]
		switch {
		case ok:
			level = l
		case subject == "" || boolQuery(r, "defaultToGlobal"):
			level = st.level("")
		default:
			err = errf(http.StatusNotFound, CodeSubjectConfigNotFound, "Subject '%s' does not have subject-level compatibility configured", subject)
		}
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"compatibilityLevel": level}, nil
}

func (h *Handler) putConfig(r *http.Request) (any, error) {
	var req struct {
		Compatibility string `json:"compatibility"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	level := strings.ToUpper(req.Compatibility)
	if _, ok := levels[level]; !ok {
		return nil, errf(http.StatusUnprocessableEntity, CodeInvalidCompatibility,
			"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
	}
	defer h.lockWrites()()
	err := h.writeLocked(r.Context(), Record{Key: Key{KeyType: KeyConfig, Subject: subjectKey(r)}, Config: &ConfigValue{CompatibilityLevel: level}})
	if err != nil {
		return nil, err
	}
	return map[string]string{"compatibility": level}, nil
}

// subjectKey is the CONFIG/MODE key's subject: null for the global one.
func subjectKey(r *http.Request) *string {
	if s := r.PathValue("subject"); s != "" {
		return &s
	}
	return nil
}

func (h *Handler) deleteConfig(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	defer h.lockWrites()()
	var prev string
	var ok bool
	h.viewLocked(func(st *State) { prev, ok = st.config[subject] })
	if !ok && subject == "" {
		return map[string]string{"compatibilityLevel": defaultLevel}, nil
	}
	if !ok {
		return nil, errf(http.StatusNotFound, CodeSubjectConfigNotFound, "Subject '%s' does not have subject-level compatibility configured", subject)
	}
	if err := h.writeLocked(r.Context(), Record{Key: Key{KeyType: KeyConfig, Subject: subjectKey(r)}}); err != nil {
		return nil, err
	}
	return map[string]string{"compatibilityLevel": prev}, nil
}

func (h *Handler) getMode(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	var mode string
	var err error
	h.store.View(func(st *State) {
		m, ok := st.mode[subject]
		switch {
		case ok:
			mode = m
		case subject == "" || boolQuery(r, "defaultToGlobal"):
			mode = st.modeOf("")
		default:
			err = errf(http.StatusNotFound, CodeSubjectModeNotFound, "Subject '%s' does not have subject-level mode configured", subject)
		}
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"mode": mode}, nil
}

func (h *Handler) putMode(r *http.Request) (any, error) {
	var req struct {
		Mode string `json:"mode"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	mode := strings.ToUpper(req.Mode)
	if !modes[mode] {
		return nil, errf(http.StatusUnprocessableEntity, CodeInvalidMode, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT")
	}
	subject := r.PathValue("subject")
	defer h.lockWrites()()
	var err error
	if mode == modeImport && !boolQuery(r, "force") {
		h.viewLocked(func(st *State) {
			for s := range st.subjects {
				if (subject == "" || s == subject) && len(st.versions(s, false)) > 0 {
					err = notPermitted("Cannot import since found existing subjects")
				}
			}
		})
	}
	if err != nil {
		return nil, err
	}
	if err := h.writeLocked(r.Context(), Record{Key: Key{KeyType: KeyMode, Subject: subjectKey(r)}, Mode: &ModeValue{Mode: mode}}); err != nil {
		return nil, err
	}
	return map[string]string{"mode": mode}, nil
}

func (h *Handler) deleteMode(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	defer h.lockWrites()()
	var prev string
	var ok bool
	h.viewLocked(func(st *State) { prev, ok = st.mode[subject] })
	if !ok {
		return nil, errf(http.StatusNotFound, CodeSubjectModeNotFound, "Subject '%s' does not have subject-level mode configured", subject)
	}
	if err := h.writeLocked(r.Context(), Record{Key: Key{KeyType: KeyMode, Subject: &subject}}); err != nil {
		return nil, err
	}
	return map[string]string{"mode": prev}, nil
}

// compatibility tests a schema against one version (checked in the
// level's directions, never transitively) or, without a version, against
// every live version as the level says.
func (h *Handler) compatibility(r *http.Request) (any, error) {
	subject := r.PathValue("subject")
	var req registerRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	vs := r.PathValue("version")
	var msgs []string
	var err error
	h.store.View(func(st *State) {
		var cand *parsed
		if cand, err = compile(st, req); err != nil {
			return
		}
		var against []*Entry
		level := st.level(subject)
		if vs != "" {
			var v int
			if v, err = parseVersion(vs); err != nil {
				return
			}
			var e *Entry
			if e, err = findVersion(st, subject, v, false); err != nil {
				return
			}
			against = []*Entry{e}
		} else {
			against = st.versions(subject, false)
		}
		var old []*parsed
		for _, e := range against {
			p, perr := compile(st, entryRequest(e))
			if perr != nil || SchemaType(e.SchemaType) != SchemaType(typeOrAvro(req.SchemaType)) {
				msgs = append(msgs, "schema type differs from version "+itoa(e.Version))
				continue
			}
			old = append(old, p)
		}
		msgs = append(msgs, checkCompatible(level, cand, old)...)
	})
	if err != nil {
		return nil, err
	}
	out := map[string]any{"is_compatible": len(msgs) == 0}
	if boolQuery(r, "verbose") {
		if msgs == nil {
			msgs = []string{}
		}
		out["messages"] = msgs
	}
	return out, nil
}

func typeOrAvro(s string) string {
	if s == "" {
		return string(Avro)
	}
	return s
}
